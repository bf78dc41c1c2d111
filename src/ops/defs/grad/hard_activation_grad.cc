// strata.HardSwishGrad(dY, X) and strata.HardSigmoidGrad(dY, Y; alpha): the gradients of HardSwish (from its input)
// and HardSigmoid (from its output) as one elementwise op each, where they were a chain of Less, Greater, And, Where,
// Div, Add and Mul nodes (five to seven full-size temporaries, bool ones among them, which also cut the
// channels-last regions of MobileNetV3's training graph):
//   HardSwishGrad:   dX = 0 where X <= -3, dY where X >= 3, else dY * (X / 3 + 1/2) (NaN X gives NaN). At X = -3
//                    and 3 this is TensorFlow's value (the gradient of x * relu6(x + 3) / 6, relu6' = 0 at its
//                    corners) and oneDNN's; the chain it replaces gave the inner formula there (-dY/2, 3dY/2).
//   HardSigmoidGrad: dX = alpha * dY where 0 < Y < 1 (the output is not clamped), else 0 (NaN Y gives 0).
#include "ops/defs/grad/activation_grad.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

Status HardSwishGradCompute(KernelContext& ctx) {
  return ActivationGradKernel(ctx, [](auto dy, auto x) {
    using C = decltype(x);
    if (x <= C(-3)) return C(0);
    if (x >= C(3)) return dy;
    return dy * (x / C(3) + C(0.5));
  });
}

Status HardSigmoidGradCompute(KernelContext& ctx) {
  const float alpha = ctx.node().GetFloat("alpha", 0.2f);
  return ActivationGradKernel(ctx, [alpha](auto dy, auto y) {
    using C = decltype(y);
    return y > C(0) && y < C(1) ? dy * static_cast<C>(alpha) : C(0);
  });
}

std::string Scalar(GradContext& ctx, double v) { return ScalarConst(ctx, InType(ctx, 0), v); }

// HardSwishGrad is linear in dY: d/d(dY) = HardSwishGrad(ddX, X). d/dX = ddX * dY / 3 where -3 < X < 3, else 0.
Status HardSwishGradGrad(GradContext& ctx) {
  const std::string ddx = ctx.output_grad(0);
  const std::string& dy = In(ctx, 0);
  const std::string& x = In(ctx, 1);
  if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, Emit1(ctx, "HardSwishGrad", {ddx, x}, {}, graph::kStrataDomain));
  if (ctx.needs_input_grad(1)) {
    const std::string zero = Scalar(ctx, 0);
    const std::string outside =
        Emit1(ctx, "Or", {Emit1(ctx, "Less", {x, Scalar(ctx, -3)}), Emit1(ctx, "Greater", {x, Scalar(ctx, 3)})});
    ctx.SetInputGrad(1, EWhere(ctx, outside, zero, EDiv(ctx, EMul(ctx, ddx, dy), Scalar(ctx, 3))));
  }
  return Status::OK();
}

// HardSigmoidGrad is linear in dY with a piecewise-constant mask of Y: d/d(dY) = HardSigmoidGrad(ddX, Y), d/dY = 0
// almost everywhere.
Status HardSigmoidGradGrad(GradContext& ctx) {
  if (ctx.needs_input_grad(0))
    ctx.SetInputGrad(
        0, Emit1(ctx, "HardSigmoidGrad", {ctx.output_grad(0), In(ctx, 1)},
                 {{"alpha", graph::Attribute::Float(ctx.node().GetFloat("alpha", 0.2f))}}, graph::kStrataDomain));
  return Status::OK();
}

}  // namespace

void RegisterHardSwishGrad(OpRegistry* r) {
  r->Add(ActivationGradSchema("HardSwishGrad", HardSwishGradCompute, HardSwishGradGrad));
}
void RegisterHardSigmoidGrad(OpRegistry* r) {
  r->Add(ActivationGradSchema("HardSigmoidGrad", HardSigmoidGradCompute, HardSigmoidGradGrad));
}

}  // namespace strata::ops
