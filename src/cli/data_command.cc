// `strata data`: the data stratum's tools, and helpers shared by their files.
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "cli/data_commands.h"
#include "core/file_util.h"

namespace strata::cli {

void AddDataCommand(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Data tools: import, inspect, stats and manifests of TFRecord datasets");
  data->require_subcommand(1);
  AddDataImportIdxCommand(*data);
  AddDataImportImagesCommand(*data);
  AddDataInspectCommand(*data);
  AddDataStatsCommand(*data);
  AddDataManifestCommand(*data);
}

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

StatusOr<io::Compression> FileCompression(const std::string& path, const std::string& flag) {
  if (flag != "auto") return io::ParseCompression(flag);
  return io::SniffFileCompression(path);
}

int64_t DataThreads() {
  if (Globals().threads > 0) return Globals().threads;
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

StatusOr<std::unique_ptr<ShardedWriter>> ShardedWriter::Open(const std::string& prefix, int64_t shards,
                                                             io::Compression compression) {
  if (shards <= 0) return InvalidArgumentError("--shards must be >= 1, got ", shards);
  const std::string dir = Dirname(prefix);
  if (!IsDirectory(dir)) STRATA_RETURN_IF_ERROR(MakeDirs(dir));
  auto w = std::make_unique<ShardedWriter>();
  for (int64_t s = 0; s < shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "-%05lld-of-%05lld.tfrecord", static_cast<long long>(s),
                  static_cast<long long>(shards));
    w->paths_.push_back(prefix + name);
    io::TfRecordWriterOptions o;
    o.compression = compression;
    o.atomic = true;
    STRATA_ASSIGN_OR_RETURN(auto writer, io::TfRecordWriter::Open(w->paths_.back(), o));
    w->writers_.push_back(std::move(writer));
  }
  return w;
}

Status ShardedWriter::Write(int64_t shard, std::string_view record) { return writers_[shard]->Write(record); }

Status ShardedWriter::Close() {
  for (auto& w : writers_) STRATA_RETURN_IF_ERROR(w->Close());
  return Status::OK();
}

std::string FormatHistogram(const std::map<int64_t, int64_t>& counts) {
  int64_t total = 0;
  for (const auto& [label, n] : counts) total += n;
  std::string out;
  for (const auto& [label, n] : counts) {
    char line[96];
    std::snprintf(line, sizeof(line), "  %lld: %lld (%.1f%%)\n", static_cast<long long>(label),
                  static_cast<long long>(n), total ? 100.0 * static_cast<double>(n) / static_cast<double>(total) : 0.0);
    out += line;
  }
  return out;
}

}  // namespace strata::cli
