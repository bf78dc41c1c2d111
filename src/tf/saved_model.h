// TensorFlow SavedModel import: <dir>/saved_model.pb + <dir>/variables/ into strata IR models, one per SignatureDef.
//
// The MetaGraphDef tagged "serve" is read. Each signature becomes its own graph::Model: the TF graph is cut at the
// signature's input tensors and walked back from its output tensors; (Stateful)PartitionedCall nodes are inlined from
// the graph's FunctionDefLibrary; variables (TF1 VariableV2, TF2 VarHandleOp/ReadVariableOp) become initializers
// whose values come from the TensorBundle, matched through the SavedModel's own restore graph (RestoreV2 feeding
// Assign / AssignVariableOp, in the top-level graph or in the restore function). A signature that takes serialized
// tf.Examples (a string input consumed by ParseExample/ParseExampleV2) is cut at the parsed dense features instead:
// its model's inputs are named by the feature keys, and Classify/Regress fill them from the request's examples.
//
// Op coverage and what is not supported: docs/serving.md ("SavedModels"). An op outside the set is an
// Unimplemented error naming the op and the node.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "strata/graph.h"

namespace strata::tf {

struct SignatureTensor {
  std::string alias;  // key in the SignatureDef's map (or the tf.Example feature key)
  std::string name;   // tensor name in the TF graph, e.g. "x:0"; the value's name in the imported model
  DType dtype = DType::kUndefined;
  PartialShape shape;
};

struct ImportedSignature {
  std::string key;          // "serving_default", "tensorflow/serving/regress", ...
  std::string method_name;  // "tensorflow/serving/predict", ...
  std::vector<SignatureTensor> inputs;   // as the SignatureDef declares them
  std::vector<SignatureTensor> outputs;
  // Non-empty for a signature that parses tf.Examples: the dense features (alias = feature key, name = the model
  // input fed with them, dtype and shape [batch, ...feature shape]).
  std::vector<SignatureTensor> features;
  std::shared_ptr<graph::Model> model;  // inputs: `features` if any, else `inputs`; outputs: `outputs` (by name)
};

struct SavedModelImport {
  std::string dir;
  std::vector<std::string> tags;
  std::vector<ImportedSignature> signatures;  // sorted by key

  const ImportedSignature* Find(const std::string& key) const;
  // "serving_default" when present, else the first predict signature, else the first one.
  const ImportedSignature* Default() const;
};

// True when `dir` holds saved_model.pb.
bool IsSavedModelDir(const std::string& dir);

// Imports every signature of the "serve" MetaGraph. Signatures that cannot be imported are errors (naming the
// signature, the node and the op), so a model is served completely or not at all.
StatusOr<SavedModelImport> LoadSavedModel(const std::string& dir);

}  // namespace strata::tf
