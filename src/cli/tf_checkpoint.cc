// strata tf_checkpoint dump PREFIX [--out DIR] [--raw]
// strata tf_checkpoint write PREFIX PATH=FILE.npy ... [--raw]
// strata tf_checkpoint import PREFIX --model_name NAME --out DIR
// strata tf_checkpoint export CHECKPOINT_DIR --like KERAS_PREFIX --model_name NAME --out PREFIX
// TF2 object-based checkpoints (tf.train.Checkpoint) and raw TensorBundles, read and written by src/tf.
#include <cstdio>
#include <set>

#include "cli/commands.h"
#include "cli/model_util.h"
#include "cli/tf_weights.h"
#include "cli/train_common.h"
#include "strata/train.h"
#include "core/file_util.h"
#include "core/logging.h"
#include "io/npy.h"
#include "tf/tensor_bundle.h"

namespace strata::cli {

bool IsTfCheckpointPrefix(const std::string& path) {
  return !path.empty() && !FileExists(path) && !IsDirectory(path) && FileExists(path + ".index");
}

namespace {

// The last component of a slash-separated name, without leading underscores ("model/_kernel" -> "kernel").
std::string LastComponent(const std::string& name) {
  std::string s = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
  return s.substr(std::min(s.find_first_not_of('_'), s.size()));
}

std::string DescribeLayer(const tf::KerasCheckpointLayer& l) {
  std::vector<std::string> vars;
  for (const auto& v : l.variables)
    vars.push_back(StrCat(v.full_name.empty() ? v.attribute : v.full_name, " ", v.value.TypeString()));
  return StrCat(l.path, " (", StrJoin(vars, ", "), ")");
}

std::string DescribeLayer(const nn::Layer& l) {
  std::vector<std::string> ws;
  for (const nn::WeightSpec& w : l.weights()) ws.push_back(StrCat(w.name, " ", DTypeName(w.dtype), w.shape.ToString()));
  return StrCat(l.name(), " [", l.type(), "] (", StrJoin(ws, ", "), ")");
}

}  // namespace

StatusOr<nn::WeightsFile> ReadKerasTfCheckpoint(const nn::Model& model, const std::string& prefix,
                                                const std::string& model_path, std::map<std::string, std::string>* keys) {
  STRATA_ASSIGN_OR_RETURN(std::vector<tf::KerasCheckpointLayer> layers, tf::ReadKerasCheckpointLayers(prefix, model_path));
  nn::WeightsFile out;
  out.where = StrCat("'", prefix, "' (TF checkpoint)");
  // By name: the Keras path, or the Keras path without its first component (a Sequential model's name).
  std::map<std::string, const tf::KerasCheckpointVariable*> by_name, by_short_name;
  size_t num_variables = 0;
  for (const auto& l : layers)
    for (const auto& v : l.variables) {
      ++num_variables;
      if (v.full_name.empty()) continue;
      by_name[v.full_name] = &v;
      const size_t slash = v.full_name.find('/');
      if (slash != std::string::npos) by_short_name[v.full_name.substr(slash + 1)] = &v;
    }
  bool all_named = model.weight_specs().size() == num_variables;
  for (const nn::WeightSpec& w : model.weight_specs()) {
    if (!all_named) break;
    auto it = by_name.find(w.name);
    if (it == by_name.end()) it = by_short_name.find(w.name);
    if (it == by_short_name.end()) {
      all_named = false;
      break;
    }
    out.tensors[w.name] = it->second->value;
    if (keys) (*keys)[w.name] = it->second->checkpoint_key;
  }
  if (all_named) {
    LogInfo("TF checkpoint ", prefix, ": ", out.tensors.size(), " variables matched to model '", model.name(),
            "' by their Keras names");
    return out;
  }
  out.tensors.clear();
  if (keys) keys->clear();
  // By position.
  std::vector<const nn::Layer*> weighted;
  for (const nn::Layer* l : model.layers())
    if (!l->weights().empty()) weighted.push_back(l);
  if (weighted.size() != layers.size()) {
    std::vector<std::string> theirs, ours;
    for (const auto& l : layers) theirs.push_back(DescribeLayer(l));
    for (const nn::Layer* l : weighted) ours.push_back(DescribeLayer(*l));
    return InvalidArgumentError("TF checkpoint ", prefix, ": its Keras model has ", layers.size(),
                                " layers with variables but model '", model.name(), "' has ", weighted.size(),
                                " layers with weights, and the variables' Keras names do not all match the model's "
                                "weight names; the checkpoint's layers: ", StrJoin(theirs, "; "),
                                "; the model's layers: ", StrJoin(ours, "; "));
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    const nn::Layer& ours = *weighted[i];
    const tf::KerasCheckpointLayer& theirs = layers[i];
    std::set<size_t> used;
    for (const nn::WeightSpec& w : ours.weights()) {
      const std::string want = LastComponent(w.name);
      size_t found = theirs.variables.size();
      for (size_t j = 0; j < theirs.variables.size() && found == theirs.variables.size(); ++j) {
        const auto& v = theirs.variables[j];
        if (!used.count(j) && (v.full_name.empty() ? LastComponent(v.attribute) : LastComponent(v.full_name)) == want)
          found = j;
      }
      if (found == theirs.variables.size())
        return InvalidArgumentError("TF checkpoint ", prefix, ": layer ", i + 1, " with weights of model '",
                                    model.name(), "', ", DescribeLayer(ours), ", has weight '", w.name,
                                    "' but the checkpoint's layer ", i + 1, ", ", DescribeLayer(theirs),
                                    ", has no variable named '", want, "'");
      used.insert(found);
      out.tensors[w.name] = theirs.variables[found].value;
      if (keys) (*keys)[w.name] = theirs.variables[found].checkpoint_key;
    }
    if (used.size() != theirs.variables.size())
      return InvalidArgumentError("TF checkpoint ", prefix, ": the checkpoint's layer ", i + 1, ", ",
                                  DescribeLayer(theirs), ", has more variables than layer ", i + 1,
                                  " with weights of model '", model.name(), "', ", DescribeLayer(ours));
  }
  LogInfo("TF checkpoint ", prefix, ": ", out.tensors.size(), " variables of ", layers.size(),
          " layers matched to model '", model.name(), "' by layer position (the Keras names differ)");
  return out;
}

namespace {

struct CkptArgs {
  std::string prefix, out;
  std::vector<std::string> tensors;
  bool raw = false;
};

Status Dump(const CkptArgs& a) {
  std::map<std::string, Tensor> tensors;
  if (a.raw) {
    STRATA_ASSIGN_OR_RETURN(tf::TensorBundle b, tf::TensorBundle::Open(a.prefix));
    for (const auto& [key, e] : b.entries()) {
      if (e.dtype == DType::kString) continue;
      STRATA_ASSIGN_OR_RETURN(tensors[key], b.Read(key));
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(tensors, tf::ReadObjectCheckpoint(a.prefix));
  }
  if (!a.out.empty()) STRATA_RETURN_IF_ERROR(MakeDirs(a.out));
  for (const auto& [name, t] : tensors) {
    std::printf("%s\t%s\n", name.c_str(), t.TypeString().c_str());
    if (!a.out.empty()) STRATA_RETURN_IF_ERROR(io::WriteNpy(JoinPath(a.out, SafeFileName(name) + ".npy"), t));
  }
  return Status::OK();
}

Status Write(const CkptArgs& a) {
  std::map<std::string, Tensor> tensors;
  for (const std::string& spec : a.tensors) {
    STRATA_ASSIGN_OR_RETURN(auto kv, SplitAssignment(spec, "tensor"));
    STRATA_ASSIGN_OR_RETURN(tensors[kv.first], io::ReadNpy(kv.second));
  }
  STRATA_RETURN_IF_ERROR(a.raw ? tf::WriteTensorBundle(a.prefix, tensors) : tf::WriteObjectCheckpoint(a.prefix, tensors));
  std::printf("wrote %s.index and %s.data-00000-of-00001 (%zu tensors)\n", a.prefix.c_str(), a.prefix.c_str(),
              tensors.size());
  return Status::OK();
}

struct ImportArgs {
  std::string prefix, model_name, model_path = "model", out;
  std::vector<int64_t> input_shape = {28, 28, 1};
  int64_t num_classes = 10;
};

Status Import(const ImportArgs& a) {
  if (!IsTfCheckpointPrefix(a.prefix))
    return NotFoundError("'", a.prefix, ".index' does not exist: give the checkpoint prefix (what "
                         "tf.train.Checkpoint.write/save returned, without .index)");
  STRATA_ASSIGN_OR_RETURN(auto model, nn::ZooModel(a.model_name, a.input_shape, a.num_classes));
  STRATA_RETURN_IF_ERROR(model->Build(0));
  STRATA_ASSIGN_OR_RETURN(nn::WeightsFile file, ReadKerasTfCheckpoint(*model, a.prefix, a.model_path));
  STRATA_RETURN_IF_ERROR(nn::AssignWeights(*model, file.tensors, file.where));
  train::TrainingState state;
  state.weights = model->weights();
  train::CheckpointOptions o;
  o.weights_only = true;
  o.metadata = {{"model_name", a.model_name}, {"num_classes", std::to_string(a.num_classes)},
                {"source", "TF checkpoint " + a.prefix}};
  STRATA_RETURN_IF_ERROR(train::WriteCheckpoint(a.out, state, o));
  std::printf("wrote %s: %zu weights of model '%s' from %s\n", a.out.c_str(), state.weights.size(),
              a.model_name.c_str(), a.prefix.c_str());
  return Status::OK();
}

struct ExportArgs {
  std::string checkpoint_dir, like, model_name, model_path = "model", out;
  std::vector<int64_t> input_shape = {28, 28, 1};
  int64_t num_classes = 10;
};

// A strata checkpoint's weights written into a copy of a Keras model's TF checkpoint: every tensor of `like` (the
// object graph, the optimizer's variables, ...) is kept and the model's variables get strata's values, so
// tf.train.Checkpoint(model=keras_model).read(OUT) restores them into the Keras model.
Status Export(const ExportArgs& a) {
  if (!IsTfCheckpointPrefix(a.like))
    return NotFoundError("--like: '", a.like, ".index' does not exist: give the prefix of the Keras model's "
                         "tf.train.Checkpoint whose layout to write");
  STRATA_ASSIGN_OR_RETURN(auto model, nn::ZooModel(a.model_name, a.input_shape, a.num_classes));
  STRATA_RETURN_IF_ERROR(model->Build(0));
  STRATA_RETURN_IF_ERROR(LoadCheckpointWeights(model.get(), a.checkpoint_dir));
  std::map<std::string, std::string> keys;
  STRATA_ASSIGN_OR_RETURN(nn::WeightsFile file, ReadKerasTfCheckpoint(*model, a.like, a.model_path, &keys));
  STRATA_ASSIGN_OR_RETURN(tf::TensorBundle like, tf::TensorBundle::Open(a.like));
  std::map<std::string, Tensor> tensors;
  for (const auto& [key, e] : like.entries()) {
    if (e.dtype == DType::kString) {
      STRATA_ASSIGN_OR_RETURN(std::vector<std::string> strings, like.ReadStrings(key));
      Tensor t = Tensor::Empty(DType::kString, e.shape);
      if (t.num_elements() != static_cast<int64_t>(strings.size()))
        return DataLossError("--like ", a.like, ": string tensor '", key, "' has ", strings.size(), " values for ",
                             e.shape.ToString());
      for (size_t i = 0; i < strings.size(); ++i) t.data<std::string>()[i] = strings[i];
      tensors[key] = std::move(t);
    } else {
      STRATA_ASSIGN_OR_RETURN(tensors[key], like.Read(key));
    }
  }
  for (const auto& [name, key] : keys) {
    STRATA_ASSIGN_OR_RETURN(Tensor ours, model->GetWeight(name));
    const Tensor& theirs = tensors.at(key);
    if (ours.dtype() != theirs.dtype() || ours.shape() != theirs.shape())
      return InvalidArgumentError("weight '", name, "' is ", ours.TypeString(), " but the checkpoint's '", key, "' is ",
                                  theirs.TypeString());
    tensors[key] = ours;
  }
  STRATA_RETURN_IF_ERROR(tf::WriteTensorBundle(a.out, tensors));
  std::printf("wrote %s.index and %s.data-00000-of-00001: %zu weights of model '%s' in the layout of %s\n",
              a.out.c_str(), a.out.c_str(), keys.size(), a.model_name.c_str(), a.like.c_str());
  return Status::OK();
}

}  // namespace

void AddTfCheckpointCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("tf_checkpoint", "Read or write TensorFlow checkpoints (TensorBundle format)");
  cmd->require_subcommand(1);
  auto dump_args = std::make_shared<CkptArgs>();
  auto* dump = cmd->add_subcommand("dump", "List a checkpoint's variables (object paths) and write them as .npy");
  dump->add_option("prefix", dump_args->prefix, "Checkpoint prefix (PREFIX.index beside PREFIX.data-*)")->required();
  dump->add_option("--out", dump_args->out, "Write <name>.npy per variable here");
  dump->add_flag("--raw", dump_args->raw, "List the bundle's tensor keys instead of the object graph's paths");
  dump->callback([dump_args] {
    Status s = Dump(*dump_args);
    if (!s.ok()) ReportError(s);
  });
  auto write_args = std::make_shared<CkptArgs>();
  auto* write = cmd->add_subcommand("write", "Write .npy files as a tf.train.Checkpoint-restorable checkpoint");
  write->add_option("prefix", write_args->prefix, "Checkpoint prefix to write")->required();
  write->add_option("tensors", write_args->tensors, "PATH=FILE.npy: object path (e.g. model/dense/kernel) and value")
      ->required();
  write->add_flag("--raw", write_args->raw, "Use the names as bundle keys, without an object graph");
  write->callback([write_args] {
    Status s = Write(*write_args);
    if (!s.ok()) ReportError(s);
  });
  auto import_args = std::make_shared<ImportArgs>();
  auto* imp = cmd->add_subcommand("import", "Convert a Keras model's tf.train.Checkpoint into a strata (weights-only) "
                                            "checkpoint directory of a zoo model");
  imp->add_option("prefix", import_args->prefix, "Checkpoint prefix (PREFIX.index beside PREFIX.data-*)")->required();
  imp->add_option("--model_name", import_args->model_name, "Zoo model of the same architecture (mlp, cnn_small, ...)")
      ->required();
  imp->add_option("--input_shape", import_args->input_shape, "H W C of one example (default 28 28 1)")->expected(3);
  imp->add_option("--num_classes", import_args->num_classes, "Number of classes (default 10)");
  imp->add_option("--object", import_args->model_path,
                  "Object path of the Keras model in the checkpoint (default: model, as tf.train.Checkpoint(model=...))");
  imp->add_option("--out", import_args->out, "Checkpoint directory to write (for strata export/eval/train --weights)")
      ->required();
  imp->callback([import_args] {
    Status s = Import(*import_args);
    if (!s.ok()) ReportError(s);
  });
  auto export_args = std::make_shared<ExportArgs>();
  auto* exp = cmd->add_subcommand("export", "Write a strata checkpoint's weights into a copy of a Keras model's "
                                            "tf.train.Checkpoint (restorable into that Keras model)");
  exp->add_option("checkpoint_dir", export_args->checkpoint_dir, "strata checkpoint (directory or --checkpoint_dir)")
      ->required();
  exp->add_option("--like", export_args->like, "Prefix of the Keras model's TF checkpoint whose layout to write")
      ->required();
  exp->add_option("--model_name", export_args->model_name, "Zoo model of the checkpoint (mlp, cnn_small, ...)")
      ->required();
  exp->add_option("--input_shape", export_args->input_shape, "H W C of one example (default 28 28 1)")->expected(3);
  exp->add_option("--num_classes", export_args->num_classes, "Number of classes (default 10)");
  exp->add_option("--object", export_args->model_path, "Object path of the Keras model (default: model)");
  exp->add_option("--out", export_args->out, "Checkpoint prefix to write")->required();
  exp->callback([export_args] {
    Status s = Export(*export_args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
