// `strata export`: a trained model (--checkpoint_dir: rebuilt from its model config, or the zoo model of --model_name
// for checkpoints without one) to <base>/<name>/<version>/model.onnx with a
// serving signature (input_image [None,H,W,C] float32, optional baked-in /255, outputs logits and probabilities),
// labels in assets/labels.json and ONNX metadata; checked by onnx's checker. --format tflite writes
// <base>/<name>/<version>/model.tflite instead (float32, or int8 with --quantize int8 --calibration DATA).
#include <algorithm>
#include <cstdio>

#include "cli/quantize_calibrate.h"
#include "cli/train_common.h"
#include "core/file_util.h"
#include "strata/train.h"
#include "tf/tflite.h"

namespace strata::cli {
namespace {

struct ExportArgs {
  TrainFlags flags;
  std::string base_dir, name;
  int64_t version = 1;
  bool raw_pixels = true;
  std::vector<std::string> labels;
  std::string format = "onnx";
  std::string quantize = "none";
  std::vector<std::string> calibration;
  std::string method = "minmax";
  int64_t num_calibration = 0;
};

// --format tflite: the serving graph as <base>/<name>/<version>/model.tflite.
StatusOr<std::string> ExportTfliteFile(const nn::Model& model, const ExportArgs& a, const train::ExportOptions& o) {
  STRATA_ASSIGN_OR_RETURN(graph::Model serving, train::ServingModel(model, o));
  STRATA_RETURN_IF_ERROR(tf::TflitePrepare(&serving));
  tf::TfliteExportOptions to;
  if (a.quantize == "int8") {
    to.int8 = true;
    STRATA_ASSIGN_OR_RETURN(quant::CalibrationData data,
                            quant::ReadCalibrationData(a.calibration, serving.graph.inputs));
    std::vector<std::string> values;
    for (const std::string& v : tf::TfliteCalibrationValues(serving)) {
      if (serving.graph.FindInput(v) == nullptr) values.push_back(v);
    }
    quant::CalibrationOptions co;
    co.method = a.method == "percentile" ? quant::CalibrationMethod::kPercentile : quant::CalibrationMethod::kMinMax;
    co.num_samples = a.num_calibration;
    co.threads = Globals().threads;
    STRATA_ASSIGN_OR_RETURN(auto ranges, quant::Calibrate(serving, data, values, co));
    for (const auto& [name, r] : ranges) to.ranges[name] = {r.lo, r.hi};
    // Model inputs: the range of the calibration data itself.
    for (const auto& [name, t] : data) {
      const int64_t n = a.num_calibration > 0 ? std::min(a.num_calibration, t.dim(0)) : t.dim(0);
      auto v = t.values<float>().subspan(0, static_cast<size_t>(n * (t.num_elements() / t.dim(0))));
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      to.ranges[name] = {*lo, *hi};
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::string bytes, tf::ExportTflite(serving, to));
  const std::string dir =
      JoinPath(JoinPath(a.base_dir, a.name.empty() ? a.flags.model_name : a.name), std::to_string(a.version));
  STRATA_RETURN_IF_ERROR(MakeDirs(dir));
  const std::string path = JoinPath(dir, "model.tflite");
  STRATA_RETURN_IF_ERROR(WriteFileAtomic(path, bytes));
  return path;
}

Status RunExport(CLI::App* cmd, ExportArgs a) {
  STRATA_RETURN_IF_ERROR(ApplyConfig(cmd, &a.flags));
  if (a.flags.checkpoint_dir.empty()) return InvalidArgumentError("give --checkpoint_dir");
  if (a.base_dir.empty()) return InvalidArgumentError("give --export_base_dir");
  STRATA_ASSIGN_OR_RETURN(auto model, CheckpointModel(cmd, &a.flags));
  train::ExportOptions o;
  o.input_scale = a.raw_pixels ? 1.0f / 255.0f : 1.0f;
  o.labels = a.labels;
  if (a.quantize != "none" && a.format != "tflite")
    return InvalidArgumentError(
        "--quantize int8 needs --format tflite (for an int8 ONNX model, run strata quantize "
        "on the exported model.onnx)");
  if (a.quantize == "int8" && a.calibration.empty())
    return InvalidArgumentError(
        "--quantize int8 needs --calibration FILE.npy (representative float32 inputs, "
        "samples along axis 0, as the served model takes them)");
  if (a.quantize == "none" && !a.calibration.empty())
    return InvalidArgumentError("--calibration is only used with --quantize int8");
  std::string path;
  if (a.format == "tflite") {
    if (!a.labels.empty())
      std::fprintf(stderr,
                   "strata export: note: --labels are not written with --format tflite (the .tflite file "
                   "carries no assets)\n");
    STRATA_ASSIGN_OR_RETURN(path, ExportTfliteFile(*model, a, o));
  } else {
    STRATA_ASSIGN_OR_RETURN(
        path, train::ExportModel(*model, a.base_dir, a.name.empty() ? a.flags.model_name : a.name, a.version, o));
  }
  std::printf("exported %s (%sinput_image float32 [None,%lld,%lld,%lld]%s; outputs logits, probabilities)\n",
              path.c_str(), a.quantize == "int8" ? "int8 inside, " : "", (long long)a.flags.input_shape[0],
              (long long)a.flags.input_shape[1], (long long)a.flags.input_shape[2],
              a.raw_pixels ? ", raw 0..255 pixels scaled by 1/255 inside" : "");
  return Status::OK();
}

}  // namespace

void AddExportCommand(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand(
      "export", "Export a trained model as <base>/<name>/<version>/model.onnx (or model.tflite) for serving");
  AddTrainFlags(cmd, &args->flags, false);
  cmd->add_option(FlagNames("--export_base_dir"), args->base_dir, "Base directory of exported models")->required();
  cmd->add_option("--name", args->name, "Model name (default: --model_name)");
  cmd->add_option("--version", args->version, "Version directory (a positive integer)");
  cmd->add_option(FlagNames("--raw_pixels"), args->raw_pixels, "Serve raw 0..255 pixels (bakes /255 into the graph)");
  cmd->add_option("--labels", args->labels, "Class names, index order (written to assets/labels.json)");
  cmd->add_option("--format", args->format, "onnx (default): model.onnx; tflite: model.tflite (TFLite flatbuffer)")
      ->check(CLI::IsMember({"onnx", "tflite"}));
  cmd->add_option("--quantize", args->quantize,
                  "none (default) or int8 (--format tflite): full-integer TFLite model per TFLite's quantization spec")
      ->check(CLI::IsMember({"none", "int8"}));
  cmd->add_option("--calibration", args->calibration,
                  "--quantize int8: representative inputs, FILE.npy (float32, samples along axis 0, raw as served)");
  cmd->add_option("--calibration_method", args->method, "minmax (default) or percentile (99.999)")
      ->check(CLI::IsMember({"minmax", "percentile"}));
  cmd->add_option("--num_calibration", args->num_calibration, "Use the first N calibration samples (default: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([cmd, args] {
    Status s = RunExport(cmd, *args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
