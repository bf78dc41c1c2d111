// strata tf_checkpoint dump PREFIX [--out DIR] [--raw]
// strata tf_checkpoint write PREFIX PATH=FILE.npy ... [--raw]
// TF2 object-based checkpoints (tf.train.Checkpoint) and raw TensorBundles, read and written by src/tf.
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_util.h"
#include "core/file_util.h"
#include "io/npy.h"
#include "tf/tensor_bundle.h"

namespace strata::cli {
namespace {

struct CkptArgs {
  std::string prefix, out;
  std::vector<std::string> tensors;
  bool raw = false;
};

Status Dump(const CkptArgs& a) {
  std::map<std::string, Tensor> tensors;
  if (a.raw) {
    STRATA_ASSIGN_OR_RETURN(tf::TensorBundle b, tf::TensorBundle::Open(a.prefix));
    for (const auto& [key, e] : b.entries()) {
      if (e.dtype == DType::kString) continue;
      STRATA_ASSIGN_OR_RETURN(tensors[key], b.Read(key));
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(tensors, tf::ReadObjectCheckpoint(a.prefix));
  }
  if (!a.out.empty()) STRATA_RETURN_IF_ERROR(MakeDirs(a.out));
  for (const auto& [name, t] : tensors) {
    std::printf("%s\t%s\n", name.c_str(), t.TypeString().c_str());
    if (!a.out.empty()) STRATA_RETURN_IF_ERROR(io::WriteNpy(JoinPath(a.out, SafeFileName(name) + ".npy"), t));
  }
  return Status::OK();
}

Status Write(const CkptArgs& a) {
  std::map<std::string, Tensor> tensors;
  for (const std::string& spec : a.tensors) {
    STRATA_ASSIGN_OR_RETURN(auto kv, SplitAssignment(spec, "tensor"));
    STRATA_ASSIGN_OR_RETURN(tensors[kv.first], io::ReadNpy(kv.second));
  }
  STRATA_RETURN_IF_ERROR(a.raw ? tf::WriteTensorBundle(a.prefix, tensors) : tf::WriteObjectCheckpoint(a.prefix, tensors));
  std::printf("wrote %s.index and %s.data-00000-of-00001 (%zu tensors)\n", a.prefix.c_str(), a.prefix.c_str(),
              tensors.size());
  return Status::OK();
}

}  // namespace

void AddTfCheckpointCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("tf_checkpoint", "Read or write TensorFlow checkpoints (TensorBundle format)");
  cmd->require_subcommand(1);
  auto dump_args = std::make_shared<CkptArgs>();
  auto* dump = cmd->add_subcommand("dump", "List a checkpoint's variables (object paths) and write them as .npy");
  dump->add_option("prefix", dump_args->prefix, "Checkpoint prefix (PREFIX.index beside PREFIX.data-*)")->required();
  dump->add_option("--out", dump_args->out, "Write <name>.npy per variable here");
  dump->add_flag("--raw", dump_args->raw, "List the bundle's tensor keys instead of the object graph's paths");
  dump->callback([dump_args] {
    Status s = Dump(*dump_args);
    if (!s.ok()) ReportError(s);
  });
  auto write_args = std::make_shared<CkptArgs>();
  auto* write = cmd->add_subcommand("write", "Write .npy files as a tf.train.Checkpoint-restorable checkpoint");
  write->add_option("prefix", write_args->prefix, "Checkpoint prefix to write")->required();
  write->add_option("tensors", write_args->tensors, "PATH=FILE.npy: object path (e.g. model/dense/kernel) and value")
      ->required();
  write->add_flag("--raw", write_args->raw, "Use the names as bundle keys, without an object graph");
  write->callback([write_args] {
    Status s = Write(*write_args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
