// What an op is: its schema (arity, shape/type inference, reference kernel, gradient) and the kernel interface.
//
// Each op's schema, inference, reference kernel and gradient sit together in src/ops/defs/<family>/<op>.cc, which
// exports one `void Register<Op>(OpRegistry*)` function; src/ops/op_list.cc calls them all, in one explicit list.
// Fast kernels (oneDNN, vectorised C++) are attached to a schema by src/ops/kernel_list.cc, in priority order; the
// reference kernel is always the last resort.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/graph.h"
#include "strata/status.h"
#include "strata/tensor.h"

namespace strata::ops {

using graph::Attribute;
using graph::AttributeMap;
using graph::Node;

// Type and shape of a value at inference time, with its contents when they are known before running (an
// initializer, a Constant, or a value folded at plan time).
struct ValueType {
  DType dtype = DType::kUndefined;
  PartialShape shape;
  const Tensor* value = nullptr;

  bool has_value() const { return value != nullptr && value->defined(); }
};

// ---- inference ----

// Infers the output types of a subgraph (an If/Loop/Scan body) from the types of its inputs (in the body's input
// order). Provided by graph-level inference, which resolves the names the body reads from enclosing scopes.
using SubgraphInferFn =
    std::function<Status(const graph::Graph& body, const std::vector<ValueType>& inputs, std::vector<ValueType>* outputs)>;

class InferContext {
 public:
  InferContext(const Node& node, std::vector<const ValueType*> inputs, int num_outputs)
      : node_(node), inputs_(std::move(inputs)), outputs_(num_outputs) {}

  const Node& node() const { return node_; }
  int opset() const { return node_.opset; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // False for an omitted optional input (empty name) or an index past the end.
  bool has_input(int i) const { return i < num_inputs() && inputs_[i] != nullptr; }
  const ValueType& input(int i) const { return *inputs_[i]; }
  DType input_dtype(int i) const { return inputs_[i]->dtype; }
  const PartialShape& input_shape(int i) const { return inputs_[i]->shape; }
  // The input's contents when known at inference time, else null.
  const Tensor* input_value(int i) const { return has_input(i) && inputs_[i]->has_value() ? inputs_[i]->value : nullptr; }

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  void SetOutput(int i, DType dtype, PartialShape shape) {
    outputs_[i].dtype = dtype;
    outputs_[i].shape = std::move(shape);
  }
  const ValueType& output(int i) const { return outputs_[i]; }
  std::vector<ValueType>& outputs() { return outputs_; }

  // InvalidArgument prefixed with the node's description.
  template <typename... Args>
  Status Error(const Args&... args) const {
    return InvalidArgumentError(node_.Describe(), ": ", args...);
  }

  // The types of `body`'s outputs when its inputs have the types `inputs` (one per body input; dtype kUndefined or
  // an unknown shape where the caller knows nothing). Graph-level inference infers the body node by node; without
  // it (an InferFn called on its own) the body's declared output types are returned. Values are never set.
  Status InferSubgraph(const graph::Graph& body, const std::vector<ValueType>& inputs,
                       std::vector<ValueType>* outputs) const;
  void set_subgraph_infer(const SubgraphInferFn* fn) { subgraph_infer_ = fn; }

 private:
  const Node& node_;
  std::vector<const ValueType*> inputs_;
  std::vector<ValueType> outputs_;
  const SubgraphInferFn* subgraph_infer_ = nullptr;
};

using InferFn = Status (*)(InferContext&);

// ---- kernels ----

// What a kernel sees while running. The executor owns the tensors; kernels read inputs and fill outputs.
class KernelContext {
 public:
  virtual ~KernelContext() = default;
  const Node& node() const { return *node_; }
  int opset() const { return node_->opset; }
  int num_inputs() const { return num_inputs_; }
  bool has_input(int i) const { return i < num_inputs_ && inputs_[i] != nullptr && inputs_[i]->defined(); }
  const Tensor& input(int i) const { return *inputs_[i]; }
  int num_outputs() const { return num_outputs_; }
  // False when the graph does not use output i (an empty output name).
  bool output_wanted(int i) const { return i < num_outputs_ && node_->has_output(i); }

  // Allocates output i (reusing the planned buffer when dtype and shape match the plan). Contents are
  // uninitialised. RESOURCE_EXHAUSTED when the memory limit would be exceeded.
  virtual StatusOr<Tensor*> Output(int i, DType dtype, const Shape& shape) = 0;
  // Makes output i a view of existing memory (e.g. an input reshaped). Only for ops whose schema sets view_input.
  virtual void SetOutput(int i, Tensor t) = 0;
  virtual Allocator* allocator() = 0;
  // Runs a subgraph (an If/Loop/Scan body) that may read values of the enclosing scopes by name; outputs come back
  // in the subgraph's output order.
  virtual Status RunSubgraph(const graph::Graph& g, const std::vector<std::pair<std::string, Tensor>>& feeds,
                             std::vector<Tensor>* outputs) = 0;
  // At least `bytes` of 64-byte aligned scratch memory for this Run alone (temporaries, library scratchpads), valid
  // until Run returns. A kernel that declares scratch_bytes() gets it from the plan's arena (planned once, counted in
  // the plan's peak, shared by the steps); anything else is allocated from allocator() for the duration of the call.
  // RESOURCE_EXHAUSTED when the memory limit would be exceeded.
  virtual StatusOr<void*> Scratch(size_t bytes);

  template <typename... Args>
  Status Error(const Args&... args) const {
    return InvalidArgumentError(node_->Describe(), ": ", args...);
  }

 protected:
  const Node* node_ = nullptr;
  const Tensor* const* inputs_ = nullptr;
  int num_inputs_ = 0;
  int num_outputs_ = 0;

 private:
  std::vector<Tensor> scratch_;  // Scratch() memory not planned by the executor
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Does the arithmetic. Must not fail on well-formed input; may return an error for data-dependent problems
  // (an index out of range, a shape tensor with a bad value).
  virtual Status Run(KernelContext& ctx) const = 0;
  virtual std::string_view name() const = 0;
  // Scratch memory each Run asks for through KernelContext::Scratch (the executor plans it once per run state).
  virtual size_t scratch_bytes() const { return 0; }
  // Whether the kernel computes in bfloat16 (SessionOptions::precision bf16, or a mixed_bfloat16 policy's node
  // attribute). The plan stores the values that only such kernels write and read in bfloat16 (Plan::StoreBf16): a
  // kernel that says so must either accept bfloat16 for an activation operand or decline the node.
  virtual bool computes_bf16() const { return false; }
};

// Everything known when a kernel is prepared: the node and the types of its inputs and outputs (concrete shapes
// when the plan is specialised to input shapes; constant input values when known).
struct KernelInit {
  const Node& node;
  std::span<const ValueType> inputs;
  std::span<const ValueType> outputs;
  // SessionOptions::conv_algorithm: whether convolution kernels may use Winograd.
  graph::ConvAlgorithm conv_algorithm = graph::ConvAlgorithm::kAuto;
  // SessionOptions::precision: whether the oneDNN convolution and matmul kernels compute in bfloat16.
  graph::Precision precision = graph::Precision::kFp32;
};

// Creates a kernel for this node, or returns Unimplemented with the reason it does not apply (shown by
// STRATA_VERBOSE=dispatch).
using KernelFactory = std::function<StatusOr<std::unique_ptr<Kernel>>(const KernelInit&)>;
using ComputeFn = Status (*)(KernelContext&);

struct KernelEntry {
  std::string name;  // "dnnl", "avx2", ...
  KernelFactory create;
};

// ---- gradients (graph to graph) ----

class GradContext {
 public:
  virtual ~GradContext() = default;
  virtual const Node& node() const = 0;
  virtual const ValueType& input_type(int i) const = 0;
  virtual const ValueType& output_type(int i) const = 0;
  // The name of the gradient flowing into output i, or "" when none does.
  virtual std::string output_grad(int i) const = 0;
  // Whether input i needs a gradient (it depends on a trainable value).
  virtual bool needs_input_grad(int i) const = 0;
  virtual void SetInputGrad(int i, std::string name) = 0;
  // Adds a node to the training graph and returns its output names.
  virtual std::vector<std::string> Emit(std::string_view op_type, std::vector<std::string> inputs,
                                        AttributeMap attrs = {}, int num_outputs = 1,
                                        std::string_view domain = graph::kOnnxDomain) = 0;
  // Adds a constant and returns its name.
  virtual std::string Constant(Tensor value) = 0;
  // The name of the forward node's output i. When the graph does not use that output (an omitted optional output,
  // e.g. Dropout's mask) the node is given a name for it, so that the gradient can read it.
  virtual std::string ForwardOutput(int i) = 0;
};

using GradFn = Status (*)(GradContext&);

// ---- schema and registry ----

// OpSchema::view_input value for ops whose output shares an attribute's tensor (Constant).
inline constexpr int kViewOfAttribute = -2;

struct OpSchema {
  std::string domain;  // "" = ai.onnx
  std::string name;
  int since_version = 1;
  int min_inputs = 1;
  int max_inputs = 1;  // -1 = variadic
  int min_outputs = 1;
  int max_outputs = 1;  // -1 = variadic
  InferFn infer = nullptr;
  ComputeFn reference = nullptr;
  GradFn grad = nullptr;
  std::string no_grad_reason;   // why there is no gradient (integer outputs, not differentiable, ...)
  bool deterministic = true;    // false for random ops: never constant-folded
  int view_input = -1;          // output 0 may be a view of this input's memory, or kViewOfAttribute
  std::vector<KernelEntry> kernels;  // fast kernels in priority order; the reference kernel comes after them
};

class OpRegistry {
 public:
  // The registry of every op strata knows, built once from op_list.cc and kernel_list.cc.
  static const OpRegistry& Global();

  void Add(OpSchema schema);
  void AddKernel(std::string_view domain, std::string_view op, KernelEntry kernel);
  const OpSchema* Find(std::string_view domain, std::string_view op) const;
  std::vector<const OpSchema*> All() const;

 private:
  std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> ops_;  // key "domain:name"
};

// op_list.cc: every op's Register function, in one list. kernel_list.cc: every fast kernel.
void RegisterAllOps(OpRegistry* registry);
void RegisterAllKernels(OpRegistry* registry);

// The reference kernel of a schema as a Kernel object.
std::unique_ptr<Kernel> MakeReferenceKernel(const OpSchema& schema);

}  // namespace strata::ops
