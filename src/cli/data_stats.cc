// `strata data stats PATTERN [--label-key label] [--num-classes N] [--image-key K]`: example count, class
// histogram and bytes of the TFRecord files matching a glob pattern, and what the quality checks would drop:
// duplicate records (always), labels outside [0, N) (with --num-classes), blank or near-constant images (with
// --image-key: an encoded JPEG/PNG, or raw uint8 pixels when the Example also has image/shape).
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/data_commands.h"
#include "core/file_util.h"
#include "io/image_codec.h"
#include "strata/data.h"

namespace strata::cli {
namespace {

struct StatsOptions {
  std::string pattern, label_key = "label", image_key, compression = "auto";
  int64_t num_classes = 0;
};

// Builds uint8 image `image` from the bytes feature: decoded JPEG/PNG, or raw pixels shaped by image/shape.
data::MapFn ImageFromFeature(const std::string& key) {
  return [key](data::Element& e) -> Status {
    STRATA_ASSIGN_OR_RETURN(Tensor bytes, e.Get(key));
    if (bytes.num_elements() != 1) return InvalidArgumentError("feature '", key, "' must hold one bytes value");
    const std::string& b = bytes.data<std::string>()[0];
    const Tensor shape = *e.Get("image/shape");
    Tensor image;
    if (shape.num_elements() > 0 && io::SniffImageFormat(b) == io::ImageFormat::kUnknown) {
      STRATA_ASSIGN_OR_RETURN(image, data::DecodeRaw(bytes, DType::kUInt8, shape.ToVector<int64_t>()));
    } else {
      STRATA_ASSIGN_OR_RETURN(image, data::image::Decode(b, 0, StrCat("feature '", key, "'")));
    }
    e.Set("image", std::move(image));
    return Status::OK();
  };
}

Status RunStats(const StatsOptions& o) {
  STRATA_ASSIGN_OR_RETURN(auto files, Glob(o.pattern));
  if (files.empty()) return NotFoundError("no files match '", o.pattern, "'");
  std::map<int64_t, int64_t> histogram;
  int64_t examples = 0, unlabelled = 0;
  uint64_t file_bytes = 0, payload = 0;
  std::vector<io::FeatureSpec> specs = {io::FeatureSpec::VarLen(o.label_key, DType::kInt64)};
  std::vector<data::QualityCheck> checks = {data::QualityCheck::Duplicate("record")};
  if (o.num_classes > 0) checks.push_back(data::QualityCheck::LabelRange(o.label_key, o.num_classes));
  if (!o.image_key.empty()) {
    specs.push_back(io::FeatureSpec::VarLen(o.image_key, DType::kString));
    specs.push_back(io::FeatureSpec::VarLen("image/shape", DType::kInt64));
    checks.push_back(data::QualityCheck::BlankImage("image"));
  }
  const data::MapFn parse = data::ParseExampleFn(specs);
  const data::MapFn to_image = o.image_key.empty() ? data::MapFn() : ImageFromFeature(o.image_key);
  auto quality = std::make_shared<data::QualityStats>();
  for (const std::string& f : files) {
    STRATA_ASSIGN_OR_RETURN(io::Compression c, FileCompression(f, o.compression));
    std::error_code ec;
    file_bytes += std::filesystem::file_size(f, ec);
    auto ds = data::Dataset::TfRecord({f}, {.compression = std::string(io::CompressionName(c))})
                  .Map([&](data::Element& e) -> Status {
                    const Tensor record = *e.Get("record");
                    payload += record.data<std::string>()[0].size();
                    STRATA_RETURN_IF_ERROR(parse(e));
                    e.Set("record", record);  // kept for the duplicate check
                    const Tensor label = *e.Get(o.label_key);
                    ++examples;
                    if (label.num_elements() == 0) {
                      ++unlabelled;
                    } else {
                      ++histogram[label.data<int64_t>()[0]];
                    }
                    return to_image ? to_image(e) : Status::OK();
                  },
                  {.name = "parse"})
                  .QualityFilter(checks, quality);
    STRATA_ASSIGN_OR_RETURN(auto it, ds.MakeIterator());
    data::Element e;
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(bool more, it->GetNext(&e));
      if (!more) break;
    }
  }
  std::printf("files: %zu (%s)\nexamples: %lld\nbytes: %s on disk, %s of records\n", files.size(), o.pattern.c_str(),
              static_cast<long long>(examples), HumanBytes(file_bytes).c_str(), HumanBytes(payload).c_str());
  std::printf("classes: %zu\nclass histogram (%s):\n%s", histogram.size(), o.label_key.c_str(),
              FormatHistogram(histogram).c_str());
  if (unlabelled > 0) std::printf("examples without '%s': %lld\n", o.label_key.c_str(), static_cast<long long>(unlabelled));
  const auto q = quality->ForEpoch(0);
  std::vector<std::string> names;
  for (const auto& c : checks) names.push_back(c.name());
  std::printf("quality checks (%s): %lld of %lld would be dropped\n", StrJoin(names, ", ").c_str(),
              static_cast<long long>(quality->TotalDropped()), static_cast<long long>(q.examined));
  for (const auto& [reason, n] : q.dropped) std::printf("  %s: %lld\n", reason.c_str(), static_cast<long long>(n));
  return Status::OK();
}

}  // namespace

void AddDataStatsCommand(CLI::App& data) {
  auto o = std::make_shared<StatsOptions>();
  auto* cmd = data.add_subcommand("stats", "Count examples, classes, bytes and quality problems of TFRecord files");
  cmd->add_option("pattern", o->pattern, "Glob pattern of TFRecord files (quote it)")->required();
  cmd->add_option("--label-key", o->label_key, "int64 feature holding the class")->capture_default_str();
  cmd->add_option("--num-classes", o->num_classes, "Check that labels lie in [0, N)");
  cmd->add_option("--image-key", o->image_key, "Bytes feature with the image (JPEG/PNG, or raw with image/shape): "
                                               "check for blank images");
  cmd->add_option("--compression", o->compression, "auto, \"\", ZLIB or GZIP")->capture_default_str();
  cmd->callback([o] {
    Status s = RunStats(*o);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
