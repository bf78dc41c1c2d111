#include "ops/grad_util.h"

namespace strata::ops {

std::string ReduceGradTo(GradContext& ctx, const std::string& grad, int i) {
  const PartialShape& in = ctx.input_type(i).shape;
  const PartialShape& out = ctx.output_type(0).shape;
  if (in.rank_known && out.rank_known && in == out) {
    bool all_named = true;  // unknown dims without a symbol might differ
    for (const Dim& d : in.dims) all_named &= d.known() || !d.symbol.empty();
    if (all_named) return grad;
  }
  const std::string shape = Emit1(ctx, "Shape", {ctx.node().inputs[i]});
  return Emit1(ctx, "ReduceSumTo", {grad, shape}, {}, graph::kStrataDomain);
}

std::string ConstInts(GradContext& ctx, std::vector<int64_t> values) {
  return ctx.Constant(Tensor::FromVector<int64_t>(values));
}

}  // namespace strata::ops
