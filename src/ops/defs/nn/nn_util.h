// Small helpers shared by the nn op family (defs/nn and math/gemm.cc).
#pragma once

#include <vector>

#include "ops/op_util.h"

namespace strata::ops::nn {

// The float type the reference kernels compute in: float32 for float16/bfloat16/float32, float64 for float64.
inline DType ComputeDTypeOf(DType t) { return t == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32; }

// `t` converted to `to` (the same tensor, sharing memory, when it already has that type). Temporaries come from
// `alloc` so that they count against the session's memory limit.
inline StatusOr<Tensor> ConvertTo(const Tensor& t, DType to, Allocator* alloc) {
  if (t.dtype() == to) return t;
  STRATA_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(to, t.shape(), alloc));
  STRATA_RETURN_IF_ERROR(ConvertElements(t, &out));
  return out;
}

// The values of a float tensor of any float dtype as C (float or double).
template <typename C>
StatusOr<std::vector<C>> ReadAs(const Tensor& t) {
  std::vector<C> out(static_cast<size_t>(t.num_elements()));
  STRATA_RETURN_IF_ERROR(DispatchFloat(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<C>(ToCompute(p[i]));
    return Status::OK();
  }));
  return out;
}

// Output shapes computed from attributes or shape inputs (huge pads, strides, output_shape values) must not overflow
// the element count: InvalidArgument when the product exceeds 2^50 elements (far beyond any allocation).
inline Status CheckElementCount(const Node& node, const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= static_cast<double>(d);
  if (n > 1125899906842624.0)
    return InvalidArgumentError(node.Describe(), ": the output shape ", s.ToString(), " has too many elements");
  return Status::OK();
}

// Checks at inference that input i is a float tensor (float16, bfloat16, float32, float64).
inline Status RequireFloatInput(const InferContext& ctx, int i, std::string_view name) {
  const DType t = ctx.input_dtype(i);
  if (t != DType::kUndefined && !IsFloatingPoint(t))
    return ctx.Error("input ", name, " must be a float tensor (float16, bfloat16, float32 or float64), got ",
                     DTypeName(t));
  return Status::OK();
}

// Checks at inference that input i has the dtype of input 0.
inline Status RequireSameDtypeAs0(const InferContext& ctx, int i, std::string_view name) {
  if (ctx.has_input(i) && ctx.input_dtype(i) != ctx.input_dtype(0))
    return ctx.Error("input ", name, " must have the element type of input 0 (", DTypeName(ctx.input_dtype(0)),
                     "), got ", DTypeName(ctx.input_dtype(i)));
  return Status::OK();
}

}  // namespace strata::ops::nn
