// `strata export`: a trained model (--checkpoint_dir: rebuilt from its model config, or the zoo model of --model_name
// for checkpoints without one) to <base>/<name>/<version>/model.onnx with a
// serving signature (input_image [None,H,W,C] float32, optional baked-in /255, outputs logits and probabilities),
// labels in assets/labels.json and ONNX metadata; checked by onnx's checker.
#include <cstdio>

#include "cli/train_common.h"
#include "strata/train.h"

namespace strata::cli {
namespace {

struct ExportArgs {
  TrainFlags flags;
  std::string base_dir, name;
  int64_t version = 1;
  bool raw_pixels = true;
  std::vector<std::string> labels;
};

Status RunExport(CLI::App* cmd, ExportArgs a) {
  STRATA_RETURN_IF_ERROR(ApplyConfig(cmd, &a.flags));
  if (a.flags.checkpoint_dir.empty()) return InvalidArgumentError("give --checkpoint_dir");
  if (a.base_dir.empty()) return InvalidArgumentError("give --export_base_dir");
  STRATA_ASSIGN_OR_RETURN(auto model, CheckpointModel(cmd, &a.flags));
  train::ExportOptions o;
  o.input_scale = a.raw_pixels ? 1.0f / 255.0f : 1.0f;
  o.labels = a.labels;
  STRATA_ASSIGN_OR_RETURN(std::string path,
                          train::ExportModel(*model, a.base_dir, a.name.empty() ? a.flags.model_name : a.name,
                                             a.version, o));
  std::printf("exported %s (input_image float32 [None,%lld,%lld,%lld]%s; outputs logits, probabilities)\n",
              path.c_str(), (long long)a.flags.input_shape[0], (long long)a.flags.input_shape[1],
              (long long)a.flags.input_shape[2], a.raw_pixels ? ", raw 0..255 pixels scaled by 1/255 inside" : "");
  return Status::OK();
}

}  // namespace

void AddExportCommand(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand("export", "Export a trained model as <base>/<name>/<version>/model.onnx for serving");
  AddTrainFlags(cmd, &args->flags, false);
  cmd->add_option(FlagNames("--export_base_dir"), args->base_dir, "Base directory of exported models")->required();
  cmd->add_option("--name", args->name, "Model name (default: --model_name)");
  cmd->add_option("--version", args->version, "Version directory (a positive integer)");
  cmd->add_option(FlagNames("--raw_pixels"), args->raw_pixels, "Serve raw 0..255 pixels (bakes /255 into the graph)");
  cmd->add_option("--labels", args->labels, "Class names, index order (written to assets/labels.json)");
  cmd->callback([cmd, args] {
    Status s = RunExport(cmd, *args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
