// `strata data manifest PATTERN [--out FILE]`: the dataset version (files, sizes, record counts and content hash) as
// JSON; data::ComputeManifest is the same for C++ callers such as the trainer.
#include <cstdio>

#include "cli/commands.h"
#include "cli/data_commands.h"
#include "core/file_util.h"
#include "strata/data.h"

namespace strata::cli {
namespace {

struct ManifestOptions {
  std::string pattern, out;
};

Status RunManifest(const ManifestOptions& o) {
  STRATA_ASSIGN_OR_RETURN(data::Manifest m, data::ComputeManifest(o.pattern));
  const std::string json = m.ToJson();
  if (!o.out.empty()) STRATA_RETURN_IF_ERROR(WriteFileAtomic(o.out, json));
  std::printf("%s", json.c_str());
  return Status::OK();
}

}  // namespace

void AddDataManifestCommand(CLI::App& data) {
  auto o = std::make_shared<ManifestOptions>();
  auto* cmd = data.add_subcommand("manifest", "Print the dataset version: files, sizes, record counts, content hash");
  cmd->add_option("pattern", o->pattern, "Glob pattern of the dataset's files (quote it)")->required();
  cmd->add_option("--out", o->out, "Also write the JSON manifest to this file");
  cmd->callback([o] {
    Status s = RunManifest(*o);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
