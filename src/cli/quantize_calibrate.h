// `strata quantize`: post-training int8 quantization of an ONNX model into a standard QDQ model.
//
// Calibration (quantize_calibrate.cc) runs the float32 model on a representative dataset and records the range of
// every activation that will be quantized; the rewrite (quantize_rewrite.cc) inserts QuantizeLinear /
// DequantizeLinear pairs with the chosen scales and zero points.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "strata/graph.h"

namespace strata::cli::quant {

enum class CalibrationMethod { kMinMax, kPercentile };

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::kMinMax;
  double percentile = 99.999;  // kPercentile: the range keeps this share of the values on each side
  int64_t num_samples = 0;     // 0 = every sample of the calibration data
  int64_t batch = 16;          // samples per run (when the model's batch dimension is not fixed)
  int threads = 0;
};

// The range [lo, hi] seen for one activation (always containing 0, so that 0 is exactly representable).
struct Range {
  float lo = 0;
  float hi = 0;
};

// Calibration data: one float32 array per model input, samples along axis 0.
using CalibrationData = std::vector<std::pair<std::string, Tensor>>;

// Reads --calibration arguments: "FILE.npy" (a model with one input) or "NAME=FILE.npy" per input. Checks each array
// against the model input's declared dtype and shape (all dims but the batch dimension); errors name the file.
StatusOr<CalibrationData> ReadCalibrationData(const std::vector<std::string>& specs,
                                              const std::vector<graph::ValueInfo>& inputs);

// Runs `model` (float32) on the calibration data and returns the range of each value in `values`.
StatusOr<std::map<std::string, Range>> Calibrate(const graph::Model& model, const CalibrationData& data,
                                                 const std::vector<std::string>& values,
                                                 const CalibrationOptions& options);

// The nodes the rewrite quantizes: ONNX Conv, Gemm and MatMul with a constant float32 weight (Gemm/MatMul: a 2-D B).
// Their float32 activation inputs are the values to calibrate.
struct QuantizableOps {
  std::vector<int> nodes;
  std::vector<std::string> activations;  // sorted, unique
};
QuantizableOps FindQuantizableOps(const graph::Graph& g);

// Rewrites `model` into a QDQ model: each activation in `ranges` gets QuantizeLinear -> DequantizeLinear (uint8,
// per tensor, asymmetric) and every reader reads the dequantized value; each quantizable node's weight becomes an
// int8 initializer (symmetric, per output channel) behind a DequantizeLinear, and a Conv bias an int32 initializer
// with scale x_scale * w_scale. Sets the default-domain opset to at least 13 (per-axis DequantizeLinear); fails on
// a model whose default opset is below 13 rather than reinterpreting its other ops.
Status RewriteQdq(graph::Model* model, const QuantizableOps& ops, const std::map<std::string, Range>& ranges);

}  // namespace strata::cli::quant
