// `strata zoo NAME`: builds a Keras application (nn::Application) with keras.applications' arguments, optionally
// loads a Keras weights file, prints one JSON line (model, params, trainable_params, output) and, given --input,
// runs the inference graph on a .npy batch (or saves it as ONNX with --save_onnx). The peer test
// tests/peer/keras_zoo.py drives it to compare strata's models with Keras's.
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_util.h"
#include "core/file_util.h"
#include "io/npy.h"
#include "strata/nn.h"
#include "strata/onnx.h"

namespace strata::cli {
namespace {

struct ZooArgs {
  std::string name;
  nn::ApplicationOptions options;
  std::string input_shape;
  std::string input, output_dir, save_onnx;
  bool summary = false;
};

Status RunZoo(ZooArgs a) {
  if (!a.input_shape.empty()) {
    STRATA_ASSIGN_OR_RETURN(a.options.input_shape, ParseDims(a.input_shape, "--input_shape"));
  }
  if (a.options.classifier_activation == "None" || a.options.classifier_activation == "none")
    a.options.classifier_activation = "linear";
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<nn::Model> model, nn::Application(a.name, a.options));
  if (a.summary) {
    STRATA_ASSIGN_OR_RETURN(std::string s, model->Summary());
    std::printf("%s\n", s.c_str());
  }
  std::printf("{\"model\": \"%s\", \"params\": %lld, \"trainable_params\": %lld, \"output\": \"%s\"}\n",
              model->name().c_str(), (long long)model->CountParams(), (long long)model->CountParams(true),
              model->output_names()[0].c_str());
  std::fflush(stdout);
  if (a.input.empty() && a.save_onnx.empty()) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(graph::Model inference, model->InferenceModel());
  if (!a.save_onnx.empty()) STRATA_RETURN_IF_ERROR(onnx::SaveModel(inference, a.save_onnx));
  if (a.input.empty()) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(Tensor x, io::ReadNpy(a.input));
  graph::SessionOptions opts;
  opts.intra_op_threads = Globals().threads;
  opts.conv_algorithm = Globals().conv_algorithm;
  STRATA_ASSIGN_OR_RETURN(auto session,
                          graph::Session::Create(std::make_shared<graph::Model>(std::move(inference)), opts));
  std::vector<Tensor> outputs;
  STRATA_RETURN_IF_ERROR(session->Run({{model->input_names()[0], x}}, &outputs));
  std::printf("%s: %s\n", model->output_names()[0].c_str(), outputs[0].shape().ToString().c_str());
  if (!a.output_dir.empty()) {
    STRATA_RETURN_IF_ERROR(MakeDirs(a.output_dir));
    STRATA_RETURN_IF_ERROR(io::WriteNpy(JoinPath(a.output_dir, model->output_names()[0] + ".npy"), outputs[0]));
  }
  return Status::OK();
}

}  // namespace

void AddZooCommand(CLI::App& app) {
  auto a = std::make_shared<ZooArgs>();
  auto* cmd = app.add_subcommand("zoo", "Build a Keras application (ResNet50V2, MobileNetV3Large, EfficientNetV2B0, "
                                        "...), load Keras weights, count parameters, run it on a .npy batch");
  std::string names;
  for (const std::string& n : nn::ApplicationNames()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("name", a->name, "One of " + names)->required();
  cmd->add_option("--input_shape", a->input_shape, "H,W,C (default: the model's default size, 3 channels)");
  cmd->add_option("--include_top", a->options.include_top, "Include the classifier (default true)");
  cmd->add_option("--weights", a->options.weights, "Keras weights file: .weights.h5 (Keras 3) or legacy .h5");
  cmd->add_option("--pooling", a->options.pooling, "Without the top: '' (feature map), avg or max");
  cmd->add_option("--classes", a->options.classes, "Classes of the classifier (default 1000)");
  cmd->add_option("--classifier_activation", a->options.classifier_activation,
                  "softmax (default), linear/None (logits), or another activation");
  cmd->add_option("--include_preprocessing", a->options.include_preprocessing,
                  "MobileNetV3/EfficientNetV2: rescale raw 0..255 pixels inside the model (default true)");
  cmd->add_option("--alpha", a->options.alpha, "MobileNetV3 width multiplier (default 1.0)");
  cmd->add_option("--minimalistic", a->options.minimalistic, "MobileNetV3 minimalistic variant");
  cmd->add_option("--input", a->input, "Run the model on this .npy batch (N,H,W,C float32)");
  cmd->add_option("--output_dir", a->output_dir, "Write <output name>.npy here");
  cmd->add_option("--save_onnx", a->save_onnx, "Save the inference graph (weights included) as ONNX");
  cmd->add_flag("--summary", a->summary, "Print the Keras-style summary");
  cmd->add_option("--threads", Globals().threads, "Intra-op threads (default: one per core)");
  AddConvAlgorithmOption(cmd, &Globals().conv_algorithm);
  cmd->callback([a] {
    Status s = RunZoo(*a);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
