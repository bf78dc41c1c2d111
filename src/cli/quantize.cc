// strata quantize MODEL.onnx --calibration DATA --out MODEL.int8.onnx [--method minmax|percentile]
//                 [--percentile P] [--num_calibration N]
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/quantize_calibrate.h"
#include "graph/passes/passes.h"
#include "strata/onnx.h"

namespace strata::cli {
namespace {

struct QuantizeArgs {
  std::string model;
  std::vector<std::string> calibration;
  std::string out;
  std::string method = "minmax";
  double percentile = 99.999;
  int64_t num_calibration = 0;
  int64_t batch = 16;
};

Status Quantize(const QuantizeArgs& a) {
  STRATA_ASSIGN_OR_RETURN(graph::Model model, onnx::LoadModel(a.model));
  // Shared weights often reach a Conv through Identity nodes: folding makes them initializers again.
  STRATA_RETURN_IF_ERROR(graph::FoldConstants(&model.graph));
  STRATA_RETURN_IF_ERROR(graph::EliminateDeadCode(&model.graph));
  const quant::QuantizableOps ops = quant::FindQuantizableOps(model.graph);
  if (ops.nodes.empty())
    return InvalidArgumentError(a.model,
                                ": no quantizable op: strata quantize quantizes Conv, Gemm and MatMul nodes "
                                "with a constant float32 weight (Gemm/MatMul: a 2-D B), and the model has none");
  STRATA_ASSIGN_OR_RETURN(quant::CalibrationData data, quant::ReadCalibrationData(a.calibration, model.graph.inputs));
  quant::CalibrationOptions opts;
  opts.method = a.method == "percentile" ? quant::CalibrationMethod::kPercentile : quant::CalibrationMethod::kMinMax;
  opts.percentile = a.percentile;
  opts.num_samples = a.num_calibration;
  opts.batch = a.batch;
  opts.threads = Globals().threads;
  STRATA_ASSIGN_OR_RETURN(auto ranges, quant::Calibrate(model, data, ops.activations, opts));
  STRATA_RETURN_IF_ERROR(quant::RewriteQdq(&model, ops, ranges));
  model.producer_name = "strata quantize";
  // IR version 8 (ONNX 1.10+) covers opset 13-17 QDQ models and every onnx checker and runtime since; a newer
  // IR version of the input (python onnx writes its latest) would fail older checkers for no feature this model uses.
  model.ir_version = std::min<int64_t>(model.ir_version, 8);
  STRATA_ASSIGN_OR_RETURN(std::string bytes, onnx::SerializeModel(model));
  Status checked = onnx::CheckModel(bytes);
  if (!checked.ok()) return InternalError("the quantized model fails onnx.checker: ", checked.message());
  STRATA_RETURN_IF_ERROR(onnx::SaveModel(model, a.out));
  std::printf("quantized %zu ops (%zu activations calibrated on %lld samples, %s) -> %s\n", ops.nodes.size(),
              ops.activations.size(),
              static_cast<long long>(a.num_calibration > 0 ? std::min(a.num_calibration, data[0].second.dim(0))
                                                           : data[0].second.dim(0)),
              a.method.c_str(), a.out.c_str());
  return Status::OK();
}

}  // namespace

void AddQuantizeCommand(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  auto* cmd = app.add_subcommand(
      "quantize",
      "Post-training int8 quantization: calibrate activation ranges on sample inputs and write an ONNX QDQ model "
      "(QuantizeLinear/DequantizeLinear pairs; activations uint8 per tensor, asymmetric; Conv/Gemm/MatMul weights "
      "int8 symmetric per output channel; Conv biases int32)");
  cmd->add_option("model", args->model, "The float32 .onnx file (default-domain opset 13 or later)")->required();
  cmd->add_option("--calibration", args->calibration,
                  "Representative inputs: FILE.npy (float32, samples along axis 0) for a one-input model, or "
                  "NAME=FILE.npy per input (repeatable)")
      ->required();
  cmd->add_option("--out", args->out, "Where to write the QDQ .onnx model")->required();
  cmd->add_option("--method", args->method,
                  "minmax (default): the full range seen; percentile: clip the (100-P)% tails of a histogram")
      ->check(CLI::IsMember({"minmax", "percentile"}));
  cmd->add_option("--percentile", args->percentile, "P for --method percentile (default 99.999)")
      ->check(CLI::Range(50.0, 100.0));
  cmd->add_option("--num_calibration", args->num_calibration, "Use the first N samples only (default: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch", args->batch, "Samples per calibration run (default 16)")->check(CLI::PositiveNumber);
  cmd->add_option("--threads", Globals().threads, "Intra-op threads (default: one per core)");
  cmd->callback([args] {
    Status s = Quantize(*args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
