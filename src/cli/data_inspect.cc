// `strata data inspect FILE [-n N]`: what a TFRecord file of Examples holds: record count and bytes, every feature
// with its kind and value counts, and the first N records. In a damaged file it reports the records before the
// damage, then the error.
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/data_commands.h"
#include "strata/example.h"

namespace strata::cli {
namespace {

struct InspectOptions {
  std::string file, compression = "auto";
  int64_t n = 3;
};

struct FeatureSummary {
  io::Feature::Kind kind = io::Feature::Kind::kNone;
  int64_t records = 0;
  size_t min_values = SIZE_MAX, max_values = 0;
  bool mixed_kinds = false;
};

std::string Printable(const std::string& s, size_t max) {
  std::string out;
  for (size_t i = 0; i < std::min(s.size(), max); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  return out + (s.size() > max ? "..." : "");
}

std::string Values(const io::Feature& f) {
  constexpr size_t kShow = 8;
  std::vector<std::string> parts;
  for (size_t i = 0; i < std::min(f.size(), kShow); ++i) {
    switch (f.kind) {
      case io::Feature::Kind::kBytes:
        parts.push_back(StrCat(f.bytes_list[i].size(), " bytes \"", Printable(f.bytes_list[i], 24), "\""));
        break;
      case io::Feature::Kind::kFloat: parts.push_back(StrCat(f.float_list[i])); break;
      case io::Feature::Kind::kInt64: parts.push_back(StrCat(f.int64_list[i])); break;
      case io::Feature::Kind::kNone: break;
    }
  }
  if (f.size() > kShow) parts.push_back(StrCat("... (", f.size(), " values)"));
  return "[" + StrJoin(parts, ", ") + "]";
}

Status RunInspect(const InspectOptions& o) {
  STRATA_ASSIGN_OR_RETURN(io::Compression c, FileCompression(o.file, o.compression));
  io::TfRecordReaderOptions ro;
  ro.compression = c;
  STRATA_ASSIGN_OR_RETURN(auto reader, io::TfRecordReader::Open(o.file, ro));
  std::map<std::string, FeatureSummary> features;
  std::string record, shown;
  int64_t records = 0, not_examples = 0;
  uint64_t payload = 0;
  Status read_error;  // a damaged file: report what came before the damage, then the error
  for (;;) {
    auto more = reader->ReadRecord(&record);
    if (!more.ok()) read_error = more.status();
    if (!more.ok() || !*more) break;
    payload += record.size();
    auto ex = io::ParseExample(record);
    if (!ex.ok()) {
      ++not_examples;
      if (records < o.n)
        shown += StrCat("record ", records, " (offset ", reader->last_record_offset(), ", ", record.size(),
                        " bytes): not a tf.train.Example: \"", Printable(record, 40), "\"\n");
      ++records;
      continue;
    }
    for (const auto& [name, f] : ex->features) {
      FeatureSummary& s = features[name];
      if (s.records > 0 && s.kind != f.kind) s.mixed_kinds = true;
      s.kind = f.kind;
      ++s.records;
      s.min_values = std::min(s.min_values, f.size());
      s.max_values = std::max(s.max_values, f.size());
    }
    if (records < o.n) {
      shown += StrCat("record ", records, " (offset ", reader->last_record_offset(), ", ", record.size(), " bytes):\n");
      for (const auto& [name, f] : ex->features)
        shown += StrCat("  ", name, ": ", io::FeatureKindName(f.kind), " ", Values(f), "\n");
    }
    ++records;
  }
  if (!read_error.ok() && records == 0) return read_error;
  std::printf("file: %s%s\nrecords: %lld (payload %s)\n", o.file.c_str(),
              c == io::Compression::kNone ? "" : StrCat(" (", io::CompressionName(c), ")").c_str(),
              static_cast<long long>(records), HumanBytes(payload).c_str());
  if (not_examples > 0) std::printf("records that are not tf.train.Example: %lld\n", static_cast<long long>(not_examples));
  std::printf("features:\n");
  for (const auto& [name, s] : features) {
    const std::string count = s.min_values == s.max_values ? StrCat(s.min_values) : StrCat(s.min_values, "-", s.max_values);
    std::printf("  %-24s %-10s %s value%s, in %lld of %lld records%s\n", name.c_str(),
                std::string(io::FeatureKindName(s.kind)).c_str(), count.c_str(), s.max_values == 1 ? "" : "s",
                static_cast<long long>(s.records), static_cast<long long>(records), s.mixed_kinds ? " (mixed kinds)" : "");
  }
  std::printf("%s", shown.c_str());
  std::fflush(stdout);
  return read_error;
}

}  // namespace

void AddDataInspectCommand(CLI::App& data) {
  auto o = std::make_shared<InspectOptions>();
  auto* cmd = data.add_subcommand("inspect", "Show the features and first records of a TFRecord file");
  cmd->add_option("file", o->file, "TFRecord file")->required();
  cmd->add_option("-n", o->n, "Records to print")->capture_default_str();
  cmd->add_option("--compression", o->compression, "auto, \"\", ZLIB or GZIP")->capture_default_str();
  cmd->callback([o] {
    Status s = RunInspect(*o);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
