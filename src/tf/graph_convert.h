// Internal to src/tf: the GraphDef walker and op converters behind LoadSavedModel.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/graph.h"
#include "tensorflow/core/framework/function.pb.h"
#include "tensorflow/core/framework/graph.pb.h"
#include "tensorflow/core/framework/tensor.pb.h"
#include "tensorflow/core/protobuf/meta_graph.pb.h"
#include "tf/saved_model.h"

namespace strata::tf {

class TensorBundle;

// The top-level graph, or one inlined call of a function (its node names prefixed by the call's path).
struct Frame {
  Frame* parent = nullptr;
  const tensorflow::FunctionDef* fn = nullptr;  // null: the top-level graph
  std::string prefix;                           // "" at top level, "call/" inside the function `call` runs
  int depth = 0;
  std::unordered_map<std::string, const tensorflow::NodeDef*> nodes;
  std::unordered_map<std::string, std::string> args;  // argument name -> reference in the caller's frame
};

// One output of one node in one frame.
struct TfRef {
  Frame* frame = nullptr;
  const tensorflow::NodeDef* node = nullptr;
  int index = 0;
};

// A TF TensorProto as a strata Tensor (content bytes, or typed value lists with TF's "last value repeats" rule).
StatusOr<Tensor> TensorFromTf(const tensorflow::TensorProto& proto, const std::string& where);

class Importer {
 public:
  Importer(std::string dir, const tensorflow::GraphDef* graph, const tensorflow::FunctionDefLibrary* lib,
           const TensorBundle* bundle);
  ~Importer();
  Status Init();
  StatusOr<ImportedSignature> ImportSignature(const std::string& key, const tensorflow::SignatureDef& sig);

  // Used by the converter.
  StatusOr<TfRef> Lookup(Frame* f, const std::string& ref);
  StatusOr<TfRef> TraceIdentity(TfRef r);
  StatusOr<Frame*> CallFrame(Frame* caller, const tensorflow::NodeDef& call);
  StatusOr<Tensor> ConstValue(const TfRef& r);
  StatusOr<Tensor> VariableValue(const tensorflow::NodeDef& var);
  static std::string Describe(const Frame* f, const tensorflow::NodeDef& n);
  Frame* top() const { return top_; }

 private:
  Frame* NewFrame(Frame* parent, const tensorflow::FunctionDef* fn, const std::string& prefix);
  StatusOr<int> OutputIndex(const Frame* f, const tensorflow::NodeDef& n, const std::string& arg, int idx);
  Status ScanRestores(Frame* f);

  std::string dir_;
  const tensorflow::GraphDef* graph_;
  const tensorflow::FunctionDefLibrary* lib_;
  const TensorBundle* bundle_;
  std::unordered_map<std::string, const tensorflow::FunctionDef*> functions_;
  std::vector<std::unique_ptr<Frame>> frames_;
  std::map<std::pair<Frame*, const tensorflow::NodeDef*>, Frame*> call_frames_;
  Frame* top_ = nullptr;
  std::map<std::string, std::string> var_keys_;  // top-level variable node -> checkpoint key
  std::map<std::string, Tensor> var_values_;
};

}  // namespace strata::tf
