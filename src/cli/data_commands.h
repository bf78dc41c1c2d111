// The `strata data ...` subcommands, one file each, registered by AddDataCommand (data_command.cc), plus the
// helpers they share.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/stream.h"
#include "io/tfrecord.h"
#include "strata/status.h"

namespace strata::cli {

void AddDataImportIdxCommand(CLI::App& data);
void AddDataImportImagesCommand(CLI::App& data);
void AddDataInspectCommand(CLI::App& data);
void AddDataStatsCommand(CLI::App& data);
void AddDataManifestCommand(CLI::App& data);

// "1.5 MB", "312 B".
std::string HumanBytes(uint64_t bytes);
// Compression of a TFRecord file from its first bytes ("auto"), or as given ("", "ZLIB", "GZIP").
StatusOr<io::Compression> FileCompression(const std::string& path, const std::string& flag);
// Worker threads for data commands: --threads, or one per core.
int64_t DataThreads();

// Writes records into `shards` files named "<prefix>-00000-of-0000N.tfrecord", each published atomically on Close.
class ShardedWriter {
 public:
  static StatusOr<std::unique_ptr<ShardedWriter>> Open(const std::string& prefix, int64_t shards,
                                                       io::Compression compression);
  Status Write(int64_t shard, std::string_view record);
  Status Close();
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<io::TfRecordWriter>> writers_;
};

// "  0: 6000 (10.0%)" lines for a class histogram.
std::string FormatHistogram(const std::map<int64_t, int64_t>& counts);

}  // namespace strata::cli
