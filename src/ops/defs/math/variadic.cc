// Min, Max, Sum, Mean: variadic (1 or more inputs of one dtype), numpy broadcasting across all inputs (opset 8+;
// opset 6 required equal shapes, which broadcasting accepts unchanged). One Register function per op; they share
// the fold.
//   Min/Max: floats before opset 12, every numeric type from opset 12. NaN propagates (numpy.minimum/maximum).
//   Sum/Mean: floats. 16-bit floats accumulate in float and round once.
#include <cmath>

#include "ops/defs/math/elementwise_kernels.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

using ew::TypeClass;

enum class Fold { kMin, kMax, kSum, kMean };

TypeClass ClassFor(Fold f, int opset) {
  return (f == Fold::kMin || f == Fold::kMax) && opset >= 12 ? TypeClass::kNumeric : TypeClass::kFloat;
}

template <typename C>
bool IsNaN(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  return false;
}

// One step of the fold, in compute type C. Min/Max keep a NaN from either side.
template <Fold kFold, typename C>
C FoldStep(C a, C b) {
  if constexpr (kFold == Fold::kMin) return (IsNaN(a) || a < b) ? a : b;
  if constexpr (kFold == Fold::kMax) return (IsNaN(a) || a > b) ? a : b;
  if constexpr (kFold == Fold::kSum || kFold == Fold::kMean) return static_cast<C>(a + b);
}

// Folds inputs 1.. into `acc` (already holding input 0 broadcast to `shape`), in type A.
template <typename T, typename A, typename F>
void FoldRest(KernelContext& ctx, const Shape& shape, A* acc, F f) {
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    ew::BroadcastBinary(acc, shape, in.data<T>(), in.shape(), acc, shape,
                        [&](A a, T b) { return f(a, static_cast<A>(b)); });
  }
}

template <Fold kFold>
Status VariadicCompute(KernelContext& ctx) {
  if (ctx.num_inputs() < 1) return ctx.Error("needs at least one input");
  const DType t = ctx.input(0).dtype();
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, ClassFor(kFold, ctx.opset())));
  Shape shape = ctx.input(0).shape();
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing (all inputs of a variadic op are required)");
    if (ctx.input(i).dtype() != t)
      return ctx.Error("all inputs must have the same element type; input 0 is ", DTypeName(t), ", input ", i, " is ",
                       DTypeName(ctx.input(i).dtype()));
    auto s = BroadcastShapes(shape, ctx.input(i).shape());
    if (!s.ok()) return ctx.Error(s.status().message());
    shape = *s;
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, t, shape));
  const int64_t n = shape.NumElements();
  return DispatchNumeric(t, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    T* out = y->data<T>();
    ew::BroadcastCopy(ctx.input(0).data<T>(), ctx.input(0).shape(), out, shape);
    auto f = [](C a, C b) { return FoldStep<kFold, C>(a, b); };
    if constexpr (std::is_same_v<T, C>) {
      FoldRest<T, C>(ctx, shape, out, f);
      if constexpr (kFold == Fold::kMean) {
        const C count = static_cast<C>(ctx.num_inputs());
        for (int64_t i = 0; i < n; ++i) out[i] = out[i] / count;
      }
    } else if constexpr (kFold == Fold::kMin || kFold == Fold::kMax) {
      FoldRest<T, T>(ctx, shape, out, [](T a, T b) {
        const C ca = static_cast<C>(a), cb = static_cast<C>(b);
        const bool keep_a = kFold == Fold::kMin ? (IsNaN(ca) || ca < cb) : (IsNaN(ca) || ca > cb);
        return keep_a ? a : b;
      });
    } else {
      // 16-bit floats: accumulate in float.
      STRATA_ASSIGN_OR_RETURN(Tensor acc_t, Tensor::Create(DType::kFloat32, shape, ctx.allocator()));
      float* acc = acc_t.data<float>();
      for (int64_t i = 0; i < n; ++i) acc[i] = static_cast<float>(out[i]);
      FoldRest<T, float>(ctx, shape, acc, f);
      const float count = kFold == Fold::kMean ? static_cast<float>(ctx.num_inputs()) : 1.0f;
      for (int64_t i = 0; i < n; ++i) out[i] = T(acc[i] / count);
    }
    return Status::OK();
  });
}

template <Fold kFold>
Status InferVariadic(InferContext& ctx) {
  if (ctx.num_inputs() < 1) return ctx.Error("needs at least one input");
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  STRATA_RETURN_IF_ERROR(ew::CheckInputClass(ctx, 0, ClassFor(kFold, ctx.opset())));
  return InferBroadcast(ctx);
}

// Sum: every input gets dY; Mean: dY / n; Min/Max: the inputs equal to the result share dY evenly (ties split it),
// each reduced to its input's shape.
template <Fold kFold>
Status VariadicGrad(GradContext& ctx) {
  const std::string& dy = ctx.output_grad(0);
  const int n = static_cast<int>(ctx.node().inputs.size());
  std::string g = dy;
  if (kFold == Fold::kMean) g = EDiv(ctx, dy, ScalarConst(ctx, InType(ctx, 0), n));
  if constexpr (kFold == Fold::kMin || kFold == Fold::kMax) {
    if (n > 1) {
      std::vector<std::string> masks;
      for (int i = 0; i < n; ++i) {
        AttributeMap to;
        to["to"] = Attribute::Int(static_cast<int64_t>(InType(ctx, 0)));
        masks.push_back(Emit1(ctx, "Cast", {Emit1(ctx, "Equal", {In(ctx, i), Out(ctx, 0)})}, std::move(to)));
      }
      const std::string share = EDiv(ctx, dy, Emit1(ctx, "Sum", masks));
      for (int i = 0; i < n; ++i)
        if (ctx.needs_input_grad(i)) ctx.SetInputGrad(i, ReduceGradTo(ctx, EMul(ctx, share, masks[i]), i));
      return Status::OK();
    }
  }
  for (int i = 0; i < n; ++i)
    if (ctx.needs_input_grad(i)) ctx.SetInputGrad(i, ReduceGradTo(ctx, g, i));
  return Status::OK();
}

template <Fold kFold>
OpSchema Variadic(const char* name, std::string no_grad_reason = "") {
  return WithGrad(
      ew::MakeSchema(name, 8, 1, -1, InferVariadic<kFold>, VariadicCompute<kFold>, std::move(no_grad_reason)),
      VariadicGrad<kFold>);
}

}  // namespace

void RegisterMax(OpRegistry* r) { r->Add(Variadic<Fold::kMax>("Max")); }
void RegisterMean(OpRegistry* r) { r->Add(Variadic<Fold::kMean>("Mean")); }
void RegisterMin(OpRegistry* r) { r->Add(Variadic<Fold::kMin>("Min")); }
void RegisterSum(OpRegistry* r) { r->Add(Variadic<Fold::kSum>("Sum")); }

}  // namespace strata::ops
