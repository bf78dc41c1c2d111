// strata convert SAVED_MODEL_DIR --out model.onnx [--signature KEY]: one signature of a TensorFlow SavedModel,
// imported (src/tf) and written as an ONNX model that onnx's checker accepts.
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_util.h"
#include "strata/onnx.h"

namespace strata::cli {
namespace {

struct ConvertArgs {
  std::string model, out, signature;
};

Status RunConvert(const ConvertArgs& a) {
  LoadedModel aliases;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<graph::Model> loaded, LoadAnyModel(a.model, a.signature, &aliases));
  const std::shared_ptr<graph::Model>& m = loaded;
  STRATA_ASSIGN_OR_RETURN(std::string bytes, onnx::SerializeModel(*m));
  Status check = onnx::CheckModel(bytes);
  if (!check.ok()) return Status(check.code(), StrCat("the converted model fails onnx's checker: ", check.message()));
  STRATA_RETURN_IF_ERROR(onnx::SaveModel(*m, a.out));
  std::printf("wrote %s (%zu nodes, %zu initializers)\n", a.out.c_str(), m->graph.nodes.size(),
              m->graph.initializers.size());
  for (const auto& [alias, name] : aliases.input_aliases) std::printf("  input  %s -> %s\n", alias.c_str(), name.c_str());
  for (const auto& [alias, name] : aliases.output_aliases)
    std::printf("  output %s -> %s\n", alias.c_str(), name.c_str());
  return Status::OK();
}

}  // namespace

void AddConvertCommand(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  auto* cmd = app.add_subcommand("convert", "Convert a TensorFlow SavedModel signature to an ONNX model");
  cmd->add_option("saved_model", args->model, "SavedModel directory (saved_model.pb + variables/)")->required();
  cmd->add_option("--out", args->out, "The .onnx file to write")->required();
  cmd->add_option("--signature", args->signature, "Signature key (default: serving_default)");
  cmd->callback([args] {
    Status s = RunConvert(*args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
