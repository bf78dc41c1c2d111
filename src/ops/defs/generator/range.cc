// Range (opset 11): [start, start + delta, ...) up to limit, from three scalars of one type (float32, float64,
// int16, int32, int64). The count is max(ceil((limit - start) / delta), 0); delta must not be 0. Element i is
// start + i * delta (computed in double for floats, exactly for integers).
#include <cmath>
#include <limits>

#include "ops/defs/tensor/tensor_util.h"

namespace strata::ops {
namespace {

bool RangeType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64;
}

// The element count, computed exactly for integers and in double for floats.
template <typename T>
StatusOr<int64_t> RangeCount(const Node& node, T start, T limit, T delta) {
  if (delta == T(0)) return InvalidArgumentError(node.Describe(), ": delta must not be 0");
  if constexpr (std::is_integral_v<T>) {
    const __int128 span = static_cast<__int128>(limit) - start;
    const __int128 d = delta;
    if ((span > 0) != (d > 0) || span == 0) return int64_t{0};
    const __int128 count = (span + d + (d > 0 ? -1 : 1)) / d;  // ceil(span / d) for same-sign span and d
    if (count > std::numeric_limits<int64_t>::max() / 64)
      return InvalidArgumentError(node.Describe(), ": the range from ", start, " to ", limit, " by ", delta,
                                  " has too many elements");
    return static_cast<int64_t>(count);
  } else {
    const double c = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
    if (std::isnan(c)) return InvalidArgumentError(node.Describe(), ": start, limit and delta must not be NaN");
    if (c <= 0) return int64_t{0};
    if (c > 1e15) return InvalidArgumentError(node.Describe(), ": range with ", c, " elements is too large");
    return static_cast<int64_t>(c);
  }
}

Status CheckScalars(const Node& node, const Tensor* const* in) {
  for (int i = 0; i < 3; ++i) {
    if (in[i]->num_elements() != 1 || in[i]->rank() > 1)
      return InvalidArgumentError(node.Describe(), ": input ", i, " must be a scalar, got ", in[i]->shape().ToString());
    if (in[i]->dtype() != in[0]->dtype())
      return InvalidArgumentError(node.Describe(), ": start, limit and delta must have one type, got ",
                                  DTypeName(in[0]->dtype()), " and ", DTypeName(in[i]->dtype()));
  }
  if (!RangeType(in[0]->dtype()))
    return InvalidArgumentError(node.Describe(), ": Range does not accept ", DTypeName(in[0]->dtype()));
  return Status::OK();
}

Status RangeInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !RangeType(t)) return ctx.Error("Range does not accept ", DTypeName(t));
  Dim count;
  const Tensor* in[3] = {ctx.input_value(0), ctx.input_value(1), ctx.input_value(2)};
  if (in[0] && in[1] && in[2]) {
    STRATA_RETURN_IF_ERROR(CheckScalars(ctx.node(), in));
    STRATA_RETURN_IF_ERROR(DispatchNumeric(t, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_integral_v<T>) {
        STRATA_ASSIGN_OR_RETURN(
            int64_t n, RangeCount<T>(ctx.node(), in[0]->data<T>()[0], in[1]->data<T>()[0], in[2]->data<T>()[0]));
        count = Dim(n);
      }
      return Status::OK();
    }));
  }
  ctx.SetOutput(0, t, PartialShape::Of({count}));
  return Status::OK();
}

Status RangeCompute(KernelContext& ctx) {
  const Tensor* in[3] = {&ctx.input(0), &ctx.input(1), &ctx.input(2)};
  STRATA_RETURN_IF_ERROR(CheckScalars(ctx.node(), in));
  return DispatchNumeric(in[0]->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_integral_v<T>) {
      const T start = in[0]->data<T>()[0], limit = in[1]->data<T>()[0], delta = in[2]->data<T>()[0];
      STRATA_ASSIGN_OR_RETURN(int64_t n, RangeCount<T>(ctx.node(), start, limit, delta));
      STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, in[0]->dtype(), Shape{n}));
      T* out = y->data<T>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<T>) {
          out[i] = static_cast<T>(static_cast<__int128>(start) + static_cast<__int128>(i) * delta);  // no overflow
        } else {
          out[i] = static_cast<T>(static_cast<double>(start) + static_cast<double>(i) * static_cast<double>(delta));
        }
      }
      return Status::OK();
    }
    return ctx.Error("Range does not accept ", DTypeName(in[0]->dtype()));
  });
}

}  // namespace

void RegisterRange(OpRegistry* r) {
  OpSchema s;
  s.name = "Range";
  s.since_version = 11;
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.infer = RangeInfer;
  s.reference = RangeCompute;
  s.no_grad_reason = "the output is generated from scalar bounds";
  r->Add(std::move(s));
}

}  // namespace strata::ops
