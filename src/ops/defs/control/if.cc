// If (opset 1, 11, 13, 16): runs then_branch when the one-element bool `cond` is true, else else_branch; the node's
// outputs are the chosen branch's outputs. Branches take no inputs and read the enclosing scopes' values by name.
// Tensor values only: sequence and optional branch outputs (opset 13/16) need non-tensor values in the executor.
#include "ops/defs/control/control_util.h"

namespace strata::ops {
namespace {

Status IfInfer(InferContext& ctx) {
  const Node& node = ctx.node();
  if (ctx.input_dtype(0) != DType::kUndefined && ctx.input_dtype(0) != DType::kBool)
    return ctx.Error("cond must be a bool tensor, got ", DTypeName(ctx.input_dtype(0)));
  const PartialShape& cs = ctx.input_shape(0);
  if (cs.IsFullyKnown() && cs.ToShape().NumElements() != 1)
    return ctx.Error("cond must have exactly one element, got shape ", cs.ToString());
  STRATA_ASSIGN_OR_RETURN(const graph::Graph* then_g, control::RequireBody(node, "then_branch"));
  STRATA_ASSIGN_OR_RETURN(const graph::Graph* else_g, control::RequireBody(node, "else_branch"));
  const int n = ctx.num_outputs();
  STRATA_RETURN_IF_ERROR(control::CheckBodyArity(node, *then_g, "then_branch", -1, n));
  STRATA_RETURN_IF_ERROR(control::CheckBodyArity(node, *else_g, "else_branch", -1, n));
  std::vector<ValueType> then_t, else_t;
  STRATA_RETURN_IF_ERROR(ctx.InferSubgraph(*then_g, {}, &then_t));
  STRATA_RETURN_IF_ERROR(ctx.InferSubgraph(*else_g, {}, &else_t));
  // A condition known at plan time picks its branch's types.
  const Tensor* cond = ctx.input_value(0);
  int pick = -1;
  if (cond != nullptr && cond->dtype() == DType::kBool && cond->num_elements() == 1) pick = cond->data<bool>()[0] ? 0 : 1;
  for (int i = 0; i < n; ++i) {
    const ValueType& a = then_t[i];
    const ValueType& b = else_t[i];
    if (a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype)
      return ctx.Error("output ", i, " is ", DTypeName(a.dtype), " in then_branch but ", DTypeName(b.dtype),
                       " in else_branch");
    if (pick >= 0) {
      const ValueType& p = pick == 0 ? a : b;
      ctx.SetOutput(i, p.dtype != DType::kUndefined ? p.dtype : (pick == 0 ? b.dtype : a.dtype), p.shape);
      continue;
    }
    ctx.SetOutput(i, a.dtype != DType::kUndefined ? a.dtype : b.dtype, control::MergeShapes(a.shape, b.shape));
  }
  return Status::OK();
}

Status IfCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  STRATA_ASSIGN_OR_RETURN(bool cond, control::ReadCondition(node, ctx.input(0), "cond"));
  const char* name = cond ? "then_branch" : "else_branch";
  STRATA_ASSIGN_OR_RETURN(const graph::Graph* body, control::RequireBody(node, name));
  std::vector<Tensor> outs;
  Status s = ctx.RunSubgraph(*body, {}, &outs);
  if (!s.ok()) return s.WithContext(StrCat(node.Describe(), " ", name));
  if (static_cast<int>(outs.size()) != ctx.num_outputs())
    return ctx.Error(name, " produced ", outs.size(), " outputs, the node has ", ctx.num_outputs());
  for (int i = 0; i < ctx.num_outputs(); ++i) STRATA_RETURN_IF_ERROR(control::EmitOutput(ctx, i, outs[i]));
  return Status::OK();
}

}  // namespace

void RegisterIf(OpRegistry* r) {
  OpSchema s;
  s.name = "If";
  s.since_version = 1;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.min_outputs = 1;
  s.max_outputs = -1;
  s.infer = IfInfer;
  s.reference = IfCompute;
  s.no_grad_reason = "control flow: gradients through subgraphs are not implemented";
  r->Add(std::move(s));
}

}  // namespace strata::ops
