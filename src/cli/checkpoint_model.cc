// The model of a checkpoint for `strata eval` and `strata export`: rebuilt from the checkpoint's model_config.json
// (no zoo flags needed; given ones must agree), or, for checkpoints without one, from the zoo flags.
#include <algorithm>
#include <cctype>

#include "cli/train_common.h"

namespace strata::cli {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A flag counts as given on the command line or, through --config, when it differs from its default.
bool Given(CLI::App* cmd, const std::string& flag, bool differs_from_default) {
  return differs_from_default || cmd->count(flag) > 0;
}

// The flags that describe the model, checked against the model a checkpoint's config rebuilt.
Status CheckModelFlags(CLI::App* cmd, const TrainFlags& f, const train::Checkpoint& c, const nn::Model& model) {
  const TrainFlags defaults;
  const std::string where = StrCat("checkpoint '", c.path, "' (its model_config.json)");
  const auto recorded = c.metadata.find("model_name");
  const std::string name = recorded != c.metadata.end() ? recorded->second : model.name();
  if (Given(cmd, "--model_name", f.model_name != defaults.model_name) && Lower(f.model_name) != Lower(name))
    return InvalidArgumentError("--model_name ", f.model_name, " disagrees with ", where, ", whose model is '", name,
                                "'; leave the flag out (the config rebuilds the model) or give '", name, "'");
  if (model.input_specs().size() == 1) {
    const std::vector<int64_t>& batch_shape = model.input_specs()[0].shape;
    const std::vector<int64_t> shape(batch_shape.begin() + 1, batch_shape.end());
    if (Given(cmd, "--input_shape", f.input_shape != defaults.input_shape) && f.input_shape != shape)
      return InvalidArgumentError("--input_shape ", StrJoin(f.input_shape, " "), " disagrees with ", where,
                                  ", whose input is ", StrJoin(shape, " "), "; leave the flag out or give ",
                                  StrJoin(shape, " "));
  }
  const std::vector<nn::TensorSpec> outs = model.output_specs();
  const auto& names = model.output_names();
  const auto logits = std::find(names.begin(), names.end(), "logits");
  if (logits != names.end()) {
    const nn::TensorSpec& s = outs[logits - names.begin()];
    const int64_t classes = s.shape.empty() ? -1 : s.shape.back();
    if (Given(cmd, "--num_classes", f.num_classes != defaults.num_classes) && f.num_classes != classes)
      return InvalidArgumentError("--num_classes ", f.num_classes, " disagrees with ", where, ", whose model has ",
                                  classes, " classes; leave the flag out or give ", classes);
  }
  return Status::OK();
}

// The flags take the checkpoint model's values (datasets are decoded to its input shape; export names it).
void AdoptModel(const train::Checkpoint& c, const nn::Model& model, TrainFlags* f) {
  const auto recorded = c.metadata.find("model_name");
  f->model_name = recorded != c.metadata.end() ? recorded->second : model.name();
  if (model.input_specs().size() == 1)
    f->input_shape.assign(model.input_specs()[0].shape.begin() + 1, model.input_specs()[0].shape.end());
  const auto& names = model.output_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == "logits" && !model.output_specs()[i].shape.empty())
      f->num_classes = model.output_specs()[i].shape.back();
}

}  // namespace

StatusOr<std::unique_ptr<nn::Model>> CheckpointModel(CLI::App* cmd, TrainFlags* f) {
  STRATA_ASSIGN_OR_RETURN(train::Checkpoint c, ReadCheckpointFlag(f->checkpoint_dir));
  std::unique_ptr<nn::Model> model;
  if (!c.model_config.empty()) {
    auto rebuilt = nn::ModelFromConfig(c.model_config);
    if (!rebuilt.ok())
      return Status(rebuilt.status()).WithContext(StrCat("checkpoint '", c.path, "' model_config.json"));
    model = std::move(*rebuilt);
    STRATA_RETURN_IF_ERROR(CheckModelFlags(cmd, *f, c, *model));
    AdoptModel(c, *model, f);
  } else {
    const TrainFlags defaults;
    const bool flags = Given(cmd, "--model_name", f->model_name != defaults.model_name) ||
                       Given(cmd, "--num_classes", f->num_classes != defaults.num_classes) ||
                       Given(cmd, "--input_shape", f->input_shape != defaults.input_shape);
    if (!flags)
      return InvalidArgumentError("checkpoint '", c.path, "' has no model_config.json (it was written before ",
                                  "checkpoints carried the model's architecture, or its model has a layer that ",
                                  "cannot describe itself): give --model_name, --input_shape and --num_classes");
    STRATA_ASSIGN_OR_RETURN(model, nn::ZooModel(f->model_name, f->input_shape, f->num_classes));
    STRATA_RETURN_IF_ERROR(model->Build(0));
  }
  STRATA_RETURN_IF_ERROR(train::CheckWeightsMatch(*model, c.state.weights, StrCat("checkpoint '", c.path, "'")));
  STRATA_RETURN_IF_ERROR(model->SetWeights(c.state.weights));
  return model;
}

}  // namespace strata::cli
