#include "ops/defs/fused/fused_util.h"

#include <array>

namespace strata::ops {

DelegateContext::DelegateContext(KernelContext& outer, int num_inputs) : outer_(outer) {
  node_ = &outer.node();
  num_inputs_ = std::min(num_inputs, outer.num_inputs());
  for (int i = 0; i < num_inputs_; ++i) ins_.push_back(outer.has_input(i) ? &outer.input(i) : nullptr);
  inputs_ = ins_.data();
  num_outputs_ = outer.num_outputs();
  produced_.assign(num_outputs_, nullptr);
  views_.reserve(num_outputs_);
}

StatusOr<Tensor*> DelegateContext::Output(int i, DType dtype, const Shape& shape) {
  STRATA_ASSIGN_OR_RETURN(Tensor * t, outer_.Output(i, dtype, shape));
  produced_[i] = t;
  return t;
}

void DelegateContext::SetOutput(int i, Tensor t) {
  // A view of an input must not be finished in place: give the fused op its own copy.
  auto out = outer_.Output(i, t.dtype(), t.shape());
  STRATA_CHECK(out.ok(), out.status().ToString());
  (*out)->CopyFrom(t);
  produced_[i] = *out;
}

WrappedContext::WrappedContext(KernelContext& outer, const Node& node, std::vector<const Tensor*> inputs)
    : outer_(outer), ins_(std::move(inputs)), outputs_(node.outputs.size()) {
  node_ = &node;
  inputs_ = ins_.data();
  num_inputs_ = static_cast<int>(ins_.size());
  num_outputs_ = static_cast<int>(node.outputs.size());
}

StatusOr<Tensor*> WrappedContext::Output(int i, DType dtype, const Shape& shape) {
  STRATA_ASSIGN_OR_RETURN(outputs_[i], Tensor::Create(dtype, shape, outer_.allocator()));
  return &outputs_[i];
}

StatusOr<const OpSchema*> BaseSchema(std::string_view op) {
  const OpSchema* s = OpRegistry::Global().Find("", op);
  if (s == nullptr) return UnimplementedError("the fused op needs ONNX ", op, ", which is not registered");
  return s;
}

Status InferLikeBase(InferContext& ctx, const OpSchema& base, int num_inputs) {
  std::vector<const ValueType*> ins;
  for (int i = 0; i < std::min(num_inputs, ctx.num_inputs()); ++i)
    ins.push_back(ctx.has_input(i) ? &ctx.input(i) : nullptr);
  InferContext sub(ctx.node(), std::move(ins), ctx.num_outputs());
  STRATA_RETURN_IF_ERROR(base.infer(sub));
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, sub.output(i).dtype, sub.output(i).shape);
  return Status::OK();
}

bool IsElementwiseBinary(std::string_view op) { return op == "Add" || op == "Sub" || op == "Mul" || op == "Div"; }

StatusOr<ElementwiseSteps> ReadElementwiseSteps(const Node& node) {
  ElementwiseSteps s;
  s.ops = node.GetStrings("ops");
  const std::vector<float> alphas = node.GetFloats("alphas"), betas = node.GetFloats("betas");
  if (s.ops.empty() || !IsElementwiseBinary(s.ops[0]))
    return InvalidArgumentError(node.Describe(), ": `ops` must start with Add, Sub, Mul or Div");
  s.num_inputs = 2;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    Activation a;
    if (i > 0 && IsElementwiseBinary(s.ops[i])) {
      ++s.num_inputs;
    } else if (i > 0 && IsFusableActivation(s.ops[i])) {
      a.op = s.ops[i];
      ActivationDefaults(a.op, &a.alpha, &a.beta);
      if (i < alphas.size()) a.alpha = alphas[i];
      if (i < betas.size()) a.beta = betas[i];
    } else if (i > 0) {
      return InvalidArgumentError(node.Describe(), ": unknown step '", s.ops[i], "'");
    }
    s.acts.push_back(a);
  }
  return s;
}

Status FinishInPlace(const Node& node, Tensor* y, const Tensor* b, const Activation& act) {
  if (y->dtype() != DType::kFloat32 && y->dtype() != DType::kFloat64)
    return UnimplementedError(node.Describe(), ": fused ops compute float32 and float64 only, got ",
                              DTypeName(y->dtype()));
  if (b != nullptr) {
    if (b->dtype() != y->dtype())
      return InvalidArgumentError(node.Describe(), ": the fused addend is ", DTypeName(b->dtype()), ", expected ",
                                  DTypeName(y->dtype()));
    auto s = BroadcastShapes(y->shape(), b->shape());
    if (!s.ok() || *s != y->shape())
      return InvalidArgumentError(node.Describe(), ": the fused addend ", b->shape().ToString(),
                                  " does not broadcast to the output ", y->shape().ToString());
  }
  return DispatchFloat(y->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* py = y->data<T>();
      if (b != nullptr) {
        const T* pb = b->data<T>();
        std::array<std::vector<int64_t>, 1> st{BroadcastStrides(b->shape(), y->shape())};
        ForEachBroadcast<1>(y->shape(), st, [&](int64_t o, const std::array<int64_t, 1>& off) { py[o] += pb[off[0]]; });
      }
      ApplyActivation(act, py, y->num_elements());
    }
    return Status::OK();
  });
}

StatusOr<Tensor> RunReferenceOp(KernelContext& ctx, std::string_view op, AttributeMap attrs,
                                std::vector<const Tensor*> inputs) {
  STRATA_ASSIGN_OR_RETURN(const OpSchema* s, BaseSchema(op));
  Node n;
  n.op_type = std::string(op);
  n.name = ctx.node().name;
  n.opset = 13;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) n.inputs.push_back(inputs[i] ? "in" + std::to_string(i) : "");
  n.outputs = {"out"};
  WrappedContext sub(ctx, n, std::move(inputs));
  STRATA_RETURN_IF_ERROR(s->reference(sub));
  return sub.output(0);
}

Status WriteQuantizedOutput(KernelContext& ctx, const Tensor& y, int scale_input) {
  if (!ctx.has_input(scale_input)) {
    STRATA_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, DType::kFloat32, y.shape()));
    out->CopyFrom(y);
    return Status::OK();
  }
  const Tensor* zero_point = ctx.has_input(scale_input + 1) ? &ctx.input(scale_input + 1) : nullptr;
  STRATA_ASSIGN_OR_RETURN(Tensor q, RunReferenceOp(ctx, "QuantizeLinear", {}, {&y, &ctx.input(scale_input), zero_point}));
  STRATA_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, q.dtype(), q.shape()));
  out->CopyFrom(q);
  return Status::OK();
}

}  // namespace strata::ops
