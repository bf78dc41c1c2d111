// GlobalAveragePool (opset 1), GlobalMaxPool (opset 1), GlobalLpPool (opset 1, 2): reduce every (n, c) plane of
// X (N, C, D1..Dn) to one value; the output is (N, C, 1, ..., 1). Three near-identical ops share this file, one table
// row each. GlobalMaxPool ignores NaN unless the whole plane is NaN, as MaxPool does. Float element types (16-bit
// floats accumulate in float32). X needs rank >= 2; any number of spatial dimensions.
#include <cmath>
#include <limits>

#include "core/parallel.h"
#include "ops/grad_util.h"
#include "ops/op_util.h"

namespace strata::ops {
namespace {

enum class GlobalKind { kAverage, kMax, kLp };

// p: an int attribute (opset >= 2) or a float one (opset 1).
StatusOr<double> ReadGlobalP(const Node& node) {
  const Attribute* a = node.FindAttr("p");
  const double p = a == nullptr ? 2.0 : a->type() == Attribute::Type::kFloat ? a->f() : static_cast<double>(a->i());
  if (!(p > 0) || !std::isfinite(p)) return InvalidArgumentError(node.Describe(), ": p must be positive, got ", p);
  return p;
}

template <GlobalKind kKind>
Status GlobalPoolInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t)) return ctx.Error("X must be a float tensor, got ", DTypeName(t));
  if (kKind == GlobalKind::kLp) STRATA_RETURN_IF_ERROR(ReadGlobalP(ctx.node()).status());
  const PartialShape& x = ctx.input_shape(0);
  if (!x.rank_known) {
    ctx.SetOutput(0, t, PartialShape::Unknown());
    return Status::OK();
  }
  if (x.rank() < 2) return ctx.Error("X must have rank >= 2 (N, C, spatial...), got ", x.ToString());
  std::vector<Dim> dims(x.rank(), Dim(1));
  dims[0] = x.dims[0];
  dims[1] = x.dims[1];
  ctx.SetOutput(0, t, PartialShape::Of(std::move(dims)));
  return Status::OK();
}

template <GlobalKind kKind, typename T>
ComputeType<T> ReducePlane(const T* x, int64_t n, double p) {
  using C = ComputeType<T>;
  if constexpr (kKind == GlobalKind::kMax) {
    if (n == 0) return -std::numeric_limits<C>::infinity();
    C best = ToCompute(x[0]);
    for (int64_t i = 1; i < n; ++i) {
      const C v = ToCompute(x[i]);
      if (v > best || best != best) best = v;
    }
    return best;
  } else if constexpr (kKind == GlobalKind::kAverage) {
    C sum = C(0);
    for (int64_t i = 0; i < n; ++i) sum += ToCompute(x[i]);
    return n > 0 ? sum / static_cast<C>(n) : std::numeric_limits<C>::quiet_NaN();
  } else {
    C sum = C(0);
    for (int64_t i = 0; i < n; ++i) {
      const C v = std::abs(ToCompute(x[i]));
      sum += p == 2.0 ? v * v : p == 1.0 ? v : std::pow(v, static_cast<C>(p));
    }
    return p == 2.0 ? std::sqrt(sum) : p == 1.0 ? sum : std::pow(sum, static_cast<C>(1.0 / p));
  }
}

template <GlobalKind kKind>
Status GlobalPoolCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!IsFloatingPoint(x.dtype())) return ctx.Error("X must be a float tensor, got ", DTypeName(x.dtype()));
  if (x.rank() < 2) return ctx.Error("X must have rank >= 2 (N, C, spatial...), got ", x.shape().ToString());
  double p = 2.0;
  if (kKind == GlobalKind::kLp) {
    STRATA_ASSIGN_OR_RETURN(p, ReadGlobalP(ctx.node()));
  }
  Shape out_shape = x.shape();
  for (int i = 2; i < x.rank(); ++i) out_shape[i] = 1;
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out_shape));
  const int64_t planes = x.dim(0) * x.dim(1), size = x.shape().Product(2, x.rank());
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    ParallelFor(planes, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, size)), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) py[i] = FromCompute<T>(ReducePlane<kKind, T>(px + i * size, size, p));
    });
    return Status::OK();
  });
}

OpSchema GlobalPool(const char* name, int since, InferFn infer, ComputeFn compute) {
  OpSchema s;
  s.name = name;
  s.since_version = since;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.infer = infer;
  s.reference = compute;
  return s;
}

// ---- gradients ----

// Average: dY / (plane size) broadcast over the plane. The division is done on dY before the broadcast (the same
// values, one per channel instead of one per input element).
Status GlobalAveragePoolGrad(GradContext& ctx) {
  const std::string scaled = EDiv(ctx, ctx.output_grad(0), InputsPerOutput(ctx));
  ctx.SetInputGrad(0, Emit1(ctx, "Expand", {scaled, Emit1(ctx, "Shape", {In(ctx, 0)})}));
  return Status::OK();
}

// Max: the elements equal to the plane's maximum share dY evenly (ties split it).
Status GlobalMaxPoolGrad(GradContext& ctx) {
  const int rank = ctx.input_type(0).shape.rank();
  if (rank < 2) return UnimplementedError(ctx.node().Describe(), ": the gradient of GlobalMaxPool needs X's rank");
  AttributeMap to;
  to["to"] = Attribute::Int(static_cast<int64_t>(InType(ctx, 0)));
  const std::string mask = Emit1(ctx, "Cast", {Emit1(ctx, "Equal", {In(ctx, 0), Out(ctx, 0)})}, std::move(to));
  std::vector<int64_t> axes;
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  std::string count = mask;
  if (!axes.empty()) count = Emit1(ctx, "ReduceSum", {mask, ConstInts(ctx, axes)});
  ctx.SetInputGrad(0, EMul(ctx, mask, EDiv(ctx, ctx.output_grad(0), count)));
  return Status::OK();
}

// Lp: y = (sum |x|^p)^(1/p), dy/dx = sign(x) |x|^(p-1) / y^(p-1).
Status GlobalLpPoolGrad(GradContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(double p, ReadGlobalP(ctx.node()));
  const std::string& x = In(ctx, 0);
  const std::string pm1 = ScalarConst(ctx, InType(ctx, 0), p - 1);
  const std::string num = EMul(ctx, Emit1(ctx, "Sign", {x}), Emit1(ctx, "Pow", {Emit1(ctx, "Abs", {x}), pm1}));
  const std::string den = Emit1(ctx, "Pow", {Out(ctx, 0), pm1});
  ctx.SetInputGrad(0, EMul(ctx, num, EDiv(ctx, ctx.output_grad(0), den)));
  return Status::OK();
}

}  // namespace

void RegisterGlobalAveragePool(OpRegistry* r) {
  r->Add(WithGrad(GlobalPool("GlobalAveragePool", 1, GlobalPoolInfer<GlobalKind::kAverage>,
                             GlobalPoolCompute<GlobalKind::kAverage>),
                  GlobalAveragePoolGrad));
}
void RegisterGlobalMaxPool(OpRegistry* r) {
  r->Add(
      WithGrad(GlobalPool("GlobalMaxPool", 1, GlobalPoolInfer<GlobalKind::kMax>, GlobalPoolCompute<GlobalKind::kMax>),
               GlobalMaxPoolGrad));
}
void RegisterGlobalLpPool(OpRegistry* r) {
  r->Add(WithGrad(GlobalPool("GlobalLpPool", 2, GlobalPoolInfer<GlobalKind::kLp>, GlobalPoolCompute<GlobalKind::kLp>),
                  GlobalLpPoolGrad));
}

}  // namespace strata::ops
