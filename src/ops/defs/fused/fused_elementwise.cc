// strata.FusedElementwise: a broadcasting binary op followed by a chain of binary ops and activations, written by
// graph/passes/fuse_elementwise.cc; the oneDNN kernel runs it as one binary primitive with binary and eltwise
// post-ops (one pass over memory instead of one per op).
//
// Attribute `ops` lists the steps: the first is Add, Sub, Mul or Div of inputs 0 and 1; each later binary step (Add,
// Sub, Mul, Div) combines the running value (left) with the next input; an activation step
// (ops/defs/fused/activation.h) takes its parameters from `alphas` / `betas` (one entry per step; defaults where
// absent). Every binary step broadcasts as numpy does, so the node computes exactly what the chain of ONNX ops
// computes; since all steps are elementwise, the reference kernel evaluates each of them directly on the final
// (broadcast) shape. Float32 and float64.
#include "ops/defs/fused/fused_util.h"

namespace strata::ops {
namespace {

template <typename T>
T Apply(std::string_view op, T a, T b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  return a / b;
}

Status FusedElementwiseInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(ElementwiseSteps steps, ReadElementwiseSteps(ctx.node()));
  if (ctx.num_inputs() != steps.num_inputs)
    return ctx.Error("the steps read ", steps.num_inputs, " inputs, the node has ", ctx.num_inputs());
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  PartialShape out = ctx.input_shape(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    auto b = BroadcastPartial(out, ctx.input_shape(i));
    if (!b.ok()) return ctx.Error(b.status().message());
    out = std::move(*b);
  }
  ctx.SetOutput(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

Status FusedElementwiseCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(ElementwiseSteps steps, ReadElementwiseSteps(ctx.node()));
  if (ctx.num_inputs() != steps.num_inputs)
    return ctx.Error("the steps read ", steps.num_inputs, " inputs, the node has ", ctx.num_inputs());
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const DType t = a.dtype();
  if (t != DType::kFloat32 && t != DType::kFloat64)
    return UnimplementedError(ctx.node().Describe(), ": FusedElementwise computes float32 and float64, got ",
                              DTypeName(t));
  for (int i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.input(i).dtype() != t) return ctx.Error("input ", i, " is ", DTypeName(ctx.input(i).dtype()));
  Shape shape = a.shape();
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    auto b = BroadcastShapes(shape, ctx.input(i).shape());
    if (!b.ok()) return ctx.Error(b.status().message());
    shape = *b;
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, t, shape));
  return DispatchFloat(t, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* py = y->data<T>();
      const T *pa = a.data<T>(), *pb = b.data<T>();
      const std::string_view op0 = steps.ops[0];
      std::array<std::vector<int64_t>, 2> st{BroadcastStrides(a.shape(), shape), BroadcastStrides(b.shape(), shape)};
      ForEachBroadcast<2>(shape, st, [&](int64_t o, const std::array<int64_t, 2>& off) {
        py[o] = Apply<T>(op0, pa[off[0]], pb[off[1]]);
      });
      int next = 2;
      for (size_t i = 1; i < steps.ops.size(); ++i) {
        if (!steps.acts[i].op.empty()) {
          ApplyActivation(steps.acts[i], py, y->num_elements());
          continue;
        }
        const Tensor& c = ctx.input(next++);
        const T* pc = c.data<T>();
        const std::string_view op = steps.ops[i];
        std::array<std::vector<int64_t>, 1> sc{BroadcastStrides(c.shape(), shape)};
        ForEachBroadcast<1>(
            shape, sc, [&](int64_t o, const std::array<int64_t, 1>& off) { py[o] = Apply<T>(op, py[o], pc[off[0]]); });
      }
    }
    return Status::OK();
  });
}

}  // namespace

void RegisterFusedElementwise(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "FusedElementwise";
  s.min_inputs = 2;
  s.max_inputs = -1;
  s.infer = FusedElementwiseInfer;
  s.reference = FusedElementwiseCompute;
  s.no_grad_reason = "inference-only: the fusion passes run on graphs after autodiff";
  r->Add(std::move(s));
}

}  // namespace strata::ops
