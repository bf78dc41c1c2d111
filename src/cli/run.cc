// strata run MODEL.onnx|SAVED_MODEL_DIR --input NAME=FILE.npy ... [--output-dir DIR] [--input_signature SIG]
// [--profile TRACE.json]
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_util.h"
#include "core/file_util.h"
#include "io/npy.h"
#include "strata/onnx.h"

namespace strata::cli {
namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  std::string input_signature;
  std::string profile;
};

Status RunModel(const RunArgs& args) {
  auto profiler = args.profile.empty() ? nullptr : std::make_shared<graph::Profiler>();
  STRATA_ASSIGN_OR_RETURN(LoadedModel lm, LoadModelSession(args.model, Globals().threads, 0, Globals().conv_algorithm,
                                                           Globals().precision, args.input_signature, profiler));
  if (profiler) profiler->StartForRuns(1);
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const std::string& spec : args.inputs) {
    STRATA_ASSIGN_OR_RETURN(auto kv, SplitAssignment(spec, "--input"));
    const bool is_pb = kv.second.size() > 3 && kv.second.compare(kv.second.size() - 3, 3, ".pb") == 0;
    STRATA_ASSIGN_OR_RETURN(Tensor t, is_pb ? onnx::ReadTensorProtoFile(kv.second) : io::ReadNpy(kv.second));
    auto alias = lm.input_aliases.find(kv.first);  // a SavedModel signature's input alias
    feeds.emplace_back(alias == lm.input_aliases.end() ? kv.first : alias->second, std::move(t));
  }
  std::vector<Tensor> outputs;
  Status run = lm.session->Run(feeds, &outputs);
  if (profiler) STRATA_RETURN_IF_ERROR(WriteProfile(*profiler, args.profile));  // a failed run's trace too
  STRATA_RETURN_IF_ERROR(run);
  if (!args.output_dir.empty()) STRATA_RETURN_IF_ERROR(MakeDirs(args.output_dir));
  const auto& sig = lm.session->outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::printf("%s: %s %s\n", sig[i].name.c_str(), std::string(DTypeName(outputs[i].dtype())).c_str(),
                outputs[i].shape().ToString().c_str());
    if (!args.output_dir.empty()) {
      const std::string path = JoinPath(args.output_dir, SafeFileName(sig[i].name) + ".npy");
      STRATA_RETURN_IF_ERROR(io::WriteNpy(path, outputs[i]));
    }
  }
  return Status::OK();
}

}  // namespace

void AddRunCommand(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Run an ONNX model or a TensorFlow SavedModel on .npy inputs and write .npy "
                                        "outputs");
  cmd->add_option("model", args->model, "The .onnx file, or a SavedModel directory (saved_model.pb + variables/; "
                                        "its serving_default signature; inputs by alias or tensor name)")->required();
  cmd->add_option("--input", args->inputs, "NAME=FILE for each model input: a .npy file, or a serialised onnx.TensorProto (.pb) (repeatable)");
  cmd->add_option("--output-dir", args->output_dir, "Write <output name>.npy for each output here");
  cmd->add_option("--threads", Globals().threads, "Intra-op threads (default: one per core)");
  AddConvAlgorithmOption(cmd, &Globals().conv_algorithm);
  AddPrecisionOption(cmd, &Globals().precision);
  AddSignatureAndProfileOptions(cmd, &args->input_signature, &args->profile);
  cmd->callback([args] {
    Status s = RunModel(*args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
