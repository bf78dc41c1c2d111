#include "ops/defs/reduce/reduce_grad.h"

#include "ops/defs/reduce/reduce_util.h"

namespace strata::ops {

ReduceGradInfo ReduceGradAxes(GradContext& ctx) {
  const Node& node = ctx.node();
  ReduceGradInfo info;
  info.keepdims = node.GetInt("keepdims", 1) != 0;
  if (ReduceAxesFromInput(node)) {
    if (node.has_input(1)) {
      auto known = KnownInputInts(ctx, 1);
      if (!known || !known->empty()) info.axes = In(ctx, 1);
    }
  } else if (node.HasAttr("axes") && !node.GetInts("axes").empty()) {
    info.axes = ConstInts(ctx, node.GetInts("axes"));
  }
  return info;
}

std::string Unreduced(GradContext& ctx, const ReduceGradInfo& info, const std::string& v) {
  return UnreduceGrad(ctx, v, info.axes, info.keepdims, In(ctx, 0), /*expand=*/false);
}

std::string ExpandedToInput(GradContext& ctx, const ReduceGradInfo& info, const std::string& v) {
  return UnreduceGrad(ctx, v, info.axes, info.keepdims, In(ctx, 0), /*expand=*/true);
}

}  // namespace strata::ops
