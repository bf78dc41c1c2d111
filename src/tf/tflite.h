// TensorFlow Lite interop (issue 13): strata IR models to .tflite flatbuffers and back.
//
// The format is TFLite's schema (file identifier "TFL3"); strata's own subset of it is tflite_schema.fbs, compiled
// by flatc at build time. The writer covers the ops of strata's exported CNNs; the reader covers those plus what TF
// Serving's test models use, and refuses anything else naming the operator.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/graph.h"

namespace strata::tf {

struct TfliteExportOptions {
  // false: float32 tensors throughout. true: full-integer int8 per TFLite's quantization spec (activations int8 per
  // tensor, asymmetric; CONV_2D / DEPTHWISE_CONV_2D weights int8 symmetric per output channel; FULLY_CONNECTED
  // weights int8 symmetric per tensor; biases int32 with scale = input scale x weight scale, zero point 0), with a
  // QUANTIZE after each float32 model input and a DEQUANTIZE before each float32 model output, so the signature
  // stays float32.
  bool int8 = false;
  // int8: the calibrated range [lo, hi] of every value TflitePrepare's graph computes and of every model input
  // (TfliteCalibrationValues lists the ones needed).
  std::map<std::string, std::pair<float, float>> ranges;
  std::string signature_key = "serving_default";
  std::string description = "strata export";
};

// The graph the writer converts: constants folded (e.g. weight transposes) and dead nodes removed, in topological
// order. ExportTflite calls it too; calibrate on its result so that value names match.
Status TflitePrepare(graph::Model* model);
// The values an int8 export needs ranges for: the model's float32 inputs and every float32 node output of the
// (prepared) graph.
std::vector<std::string> TfliteCalibrationValues(const graph::Model& prepared);

// Converts a strata IR model (ONNX operator semantics, e.g. train::ServingModel's graph) into .tflite bytes with a
// SignatureDef `signature_key` whose inputs and outputs carry the model's input and output names. Convolutions in
// ONNX's NCHW layout between NHWC<->NCHW Transposes (as strata's Keras-style models export them) become TFLite's
// NHWC ops without transposes. Unimplemented naming the node for an op or pattern without a TFLite mapping.
StatusOr<std::string> ExportTflite(const graph::Model& model, const TfliteExportOptions& options = {});

// Parses .tflite bytes into a strata IR model (float32 models; the first SignatureDef names the inputs and outputs
// when there is one, else the subgraph's tensor names). Every offset and size is checked by the flatbuffers
// Verifier before anything is read; errors name `where` (the file) and what was expected and found. An operator
// without a strata mapping is Unimplemented naming it (e.g. "TRANSPOSE_CONV").
StatusOr<graph::Model> ImportTflite(std::string_view bytes, std::string_view where);
StatusOr<graph::Model> LoadTflite(const std::string& path);

// The name of a TFLite BuiltinOperator code ("CONV_2D"), or "builtin operator N" for codes strata does not know.
std::string TfliteOpName(int code);

}  // namespace strata::tf
