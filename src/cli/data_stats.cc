// `strata data stats PATTERN [--label-key label]`: example count, class histogram and bytes of the TFRecord files
// matching a glob pattern.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/data_commands.h"
#include "core/file_util.h"
#include "strata/data.h"

namespace strata::cli {
namespace {

struct StatsOptions {
  std::string pattern, label_key = "label", compression = "auto";
};

Status RunStats(const StatsOptions& o) {
  STRATA_ASSIGN_OR_RETURN(auto files, Glob(o.pattern));
  if (files.empty()) return NotFoundError("no files match '", o.pattern, "'");
  std::map<int64_t, int64_t> histogram;
  int64_t examples = 0, unlabelled = 0;
  uint64_t file_bytes = 0, payload = 0;
  io::FeatureSpec label = io::FeatureSpec::VarLen(o.label_key, DType::kInt64);
  for (const std::string& f : files) {
    STRATA_ASSIGN_OR_RETURN(io::Compression c, FileCompression(f, o.compression));
    std::error_code ec;
    file_bytes += std::filesystem::file_size(f, ec);
    auto ds = data::Dataset::TfRecord({f}, {.compression = std::string(io::CompressionName(c))})
                  .Map([&payload](data::Element& e) -> Status {
                    payload += e.Get("record")->data<std::string>()[0].size();
                    return Status::OK();
                  })
                  .Map(data::ParseExampleFn({label}), {.name = "parse"});
    STRATA_ASSIGN_OR_RETURN(auto it, ds.MakeIterator());
    data::Element e;
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(bool more, it->GetNext(&e));
      if (!more) break;
      ++examples;
      const Tensor t = *e.Get(o.label_key);
      if (t.num_elements() == 0) {
        ++unlabelled;
      } else {
        ++histogram[t.data<int64_t>()[0]];
      }
    }
  }
  std::printf("files: %zu (%s)\nexamples: %lld\nbytes: %s on disk, %s of records\n", files.size(), o.pattern.c_str(),
              static_cast<long long>(examples), HumanBytes(file_bytes).c_str(), HumanBytes(payload).c_str());
  std::printf("classes: %zu\nclass histogram (%s):\n%s", histogram.size(), o.label_key.c_str(),
              FormatHistogram(histogram).c_str());
  if (unlabelled > 0) std::printf("examples without '%s': %lld\n", o.label_key.c_str(), static_cast<long long>(unlabelled));
  return Status::OK();
}

}  // namespace

void AddDataStatsCommand(CLI::App& data) {
  auto o = std::make_shared<StatsOptions>();
  auto* cmd = data.add_subcommand("stats", "Count examples, classes and bytes of TFRecord files");
  cmd->add_option("pattern", o->pattern, "Glob pattern of TFRecord files (quote it)")->required();
  cmd->add_option("--label-key", o->label_key, "int64 feature holding the class")->capture_default_str();
  cmd->add_option("--compression", o->compression, "auto, \"\", ZLIB or GZIP")->capture_default_str();
  cmd->callback([o] {
    Status s = RunStats(*o);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
