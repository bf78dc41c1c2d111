// strata convert SAVED_MODEL_DIR --out model.onnx [--signature KEY]: one signature of a TensorFlow SavedModel,
// imported (src/tf) and written as an ONNX model that onnx's checker accepts.
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_util.h"
#include "core/file_util.h"
#include "strata/onnx.h"
#include "tf/saved_model.h"

namespace strata::cli {
namespace {

struct ConvertArgs {
  std::string model, out, signature;
};

Status RunConvert(const ConvertArgs& a) {
  LoadedModel aliases;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<graph::Model> loaded, LoadAnyModel(a.model, a.signature, &aliases));
  auto m = std::make_shared<graph::Model>(*loaded);
  if (tf::IsSavedModelDir(a.model)) {
    // The imported graph accepts any shape (as TF does); the ONNX file declares the signature's shapes, leading
    // unknown dimensions as a symbolic "batch" and other unknown ones as "dN".
    STRATA_ASSIGN_OR_RETURN(tf::SavedModelImport sm, tf::LoadSavedModel(a.model));
    const tf::ImportedSignature* sig = a.signature.empty() ? sm.Default() : sm.Find(a.signature);
    auto declared = [&](const std::string& name) -> const tf::SignatureTensor* {
      for (const auto* list : {&sig->inputs, &sig->outputs, &sig->features})
        for (const auto& t : *list)
          if (t.name == name) return &t;
      return nullptr;
    };
    for (auto* vis : {&m->graph.inputs, &m->graph.outputs}) {
      for (auto& vi : *vis) {
        const tf::SignatureTensor* t = declared(vi.name);
        if (!t || !t->shape.rank_known) continue;
        vi.shape = t->shape;
        for (size_t i = 0; i < vi.shape.dims.size(); ++i)
          if (!vi.shape.dims[i].known()) vi.shape.dims[i].symbol = i == 0 ? "batch" : StrCat("d", i);
      }
    }
  }
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
