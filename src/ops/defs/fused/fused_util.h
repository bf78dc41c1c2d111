// Helpers for the strata-domain fused ops: their reference kernels run the reference kernel of the op they extend
// (Conv, Gemm, MatMul) and finish the result in place (residual sum, bias, activation).
#pragma once

#include <vector>

#include "ops/defs/fused/activation.h"
#include "ops/op_util.h"

namespace strata::ops {

// Shows another op's kernel the first `num_inputs` inputs of the fused node and remembers the output tensors it
// allocates.
class DelegateContext final : public KernelContext {
 public:
  DelegateContext(KernelContext& outer, int num_inputs);
  StatusOr<Tensor*> Output(int i, DType dtype, const Shape& shape) override;
  void SetOutput(int i, Tensor t) override;
  Allocator* allocator() override { return outer_.allocator(); }
  StatusOr<void*> Scratch(size_t bytes) override { return outer_.Scratch(bytes); }
  Status RunSubgraph(const graph::Graph& g, const std::vector<std::pair<std::string, Tensor>>& feeds,
                     std::vector<Tensor>* outputs) override {
    return outer_.RunSubgraph(g, feeds, outputs);
  }
  // The tensor the delegate produced as output i (null when it produced none).
  Tensor* produced(int i) { return produced_[i]; }

 private:
  KernelContext& outer_;
  std::vector<const Tensor*> ins_;
  std::vector<Tensor*> produced_;
  std::vector<Tensor> views_;  // outputs set with SetOutput are copied so that they can be finished in place
};

// Runs another op's kernel as if it were node `node` with the given inputs; its outputs are fresh tensors (from the
// outer context's allocator) kept here.
class WrappedContext final : public KernelContext {
 public:
  WrappedContext(KernelContext& outer, const Node& node, std::vector<const Tensor*> inputs);
  StatusOr<Tensor*> Output(int i, DType dtype, const Shape& shape) override;
  void SetOutput(int i, Tensor t) override { outputs_[i] = std::move(t); }
  Allocator* allocator() override { return outer_.allocator(); }
  StatusOr<void*> Scratch(size_t bytes) override { return outer_.Scratch(bytes); }
  Status RunSubgraph(const graph::Graph& g, const std::vector<std::pair<std::string, Tensor>>& feeds,
                     std::vector<Tensor>* outputs) override {
    return outer_.RunSubgraph(g, feeds, outputs);
  }
  const Tensor& output(int i) const { return outputs_[i]; }

 private:
  KernelContext& outer_;
  std::vector<const Tensor*> ins_;
  std::vector<Tensor> outputs_;
};

// The schema of an ONNX op the fused op builds on (Unimplemented when that op is not registered).
StatusOr<const OpSchema*> BaseSchema(std::string_view op);

// Runs the reference kernel of ONNX op `op` (opset 13) with `attrs` on `inputs` (null = omitted) as a one-output node
// named like ctx's node; returns its output 0 (the QDQ fused ops compose DequantizeLinear, Conv/MatMul and
// QuantizeLinear this way).
StatusOr<Tensor> RunReferenceOp(KernelContext& ctx, std::string_view op, AttributeMap attrs,
                                std::vector<const Tensor*> inputs);

// The output of a QDQ fused op's reference kernel: `y` as is (float32) when input `scale_input` (the output
// QuantizeLinear's scale) is absent, else QuantizeLinear(y, input scale_input, input scale_input + 1).
Status WriteQuantizedOutput(KernelContext& ctx, const Tensor& y, int scale_input);

// Runs `base`'s shape inference on the first `num_inputs` inputs of ctx and copies its output 0 into ctx.
Status InferLikeBase(InferContext& ctx, const OpSchema& base, int num_inputs);

// The steps of a strata.FusedElementwise node (ops/defs/fused/fused_elementwise.cc): `ops[0]` is a binary op of
// inputs 0 and 1; each later step is a binary op with the next input (acts[i].op empty) or an activation.
struct ElementwiseSteps {
  std::vector<std::string> ops;
  std::vector<Activation> acts;
  int num_inputs = 0;  // inputs the steps read
};
bool IsElementwiseBinary(std::string_view op);  // Add, Sub, Mul, Div
StatusOr<ElementwiseSteps> ReadElementwiseSteps(const Node& node);

// y += b (b broadcast to y's shape without changing it), then the activation, for float32/float64 y.
Status FinishInPlace(const Node& node, Tensor* y, const Tensor* b, const Activation& act);

}  // namespace strata::ops
