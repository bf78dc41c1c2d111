// Loop (opset 1, 11, 13, 16): runs `body` while i < M (input 0, optional) and cond (input 1, optional, then the body's
// first output) hold. The body takes (iteration number, condition, N loop-carried values) and returns (condition, N
// carried values, K scan values); the node returns the N final carried values and the K scan outputs, each the
// per-iteration values stacked along a new first axis. Without the cond input the body's condition is ignored (as
// the spec says), so a Loop with neither M nor cond never ends: that is the model's problem, not a malformed body.
// Carried values may change shape between iterations; scan values must keep theirs. Tensor values only.
#include "ops/defs/control/control_util.h"

namespace strata::ops {
namespace {

struct LoopShape {
  int carried = 0;  // N
  int scans = 0;    // K
};

StatusOr<LoopShape> CheckLoop(const Node& node, const graph::Graph& body, int node_inputs, int node_outputs) {
  LoopShape ls;
  ls.carried = std::max(0, node_inputs - 2);
  ls.scans = node_outputs - ls.carried;
  if (ls.scans < 0)
    return InvalidArgumentError(node.Describe(), ": ", ls.carried, " loop-carried inputs need at least as many outputs, got ",
                                node_outputs);
  STRATA_RETURN_IF_ERROR(control::CheckBodyArity(node, body, "body", 2 + ls.carried, 1 + ls.carried + ls.scans));
  return ls;
}

Status LoopInfer(InferContext& ctx) {
  const Node& node = ctx.node();
  STRATA_ASSIGN_OR_RETURN(const graph::Graph* body, control::RequireBody(node, "body"));
  STRATA_ASSIGN_OR_RETURN(LoopShape ls, CheckLoop(node, *body, ctx.num_inputs(), ctx.num_outputs()));
  if (ctx.has_input(0) && ctx.input_dtype(0) != DType::kUndefined && ctx.input_dtype(0) != DType::kInt64)
    return ctx.Error("M (the trip count) must be int64, got ", DTypeName(ctx.input_dtype(0)));
  if (ctx.has_input(1) && ctx.input_dtype(1) != DType::kUndefined && ctx.input_dtype(1) != DType::kBool)
    return ctx.Error("cond must be bool, got ", DTypeName(ctx.input_dtype(1)));
  std::vector<ValueType> carried(ls.carried);
  for (int i = 0; i < ls.carried; ++i) {
    if (!ctx.has_input(2 + i)) return ctx.Error("loop-carried input ", 2 + i, " is missing");
    carried[i] = ValueType{ctx.input_dtype(2 + i), ctx.input_shape(2 + i), nullptr};
  }
  // Carried values may change shape: widen their types until the body maps them to themselves (a few rounds; what
  // is still changing after that is left with unknown dimensions).
  std::vector<ValueType> outs;
  for (int round = 0; round < 4; ++round) {
    std::vector<ValueType> ins;
    ins.push_back(ValueType{DType::kInt64, PartialShape::Of(Shape{}), nullptr});
    ins.push_back(ValueType{DType::kBool, PartialShape::Of(Shape{}), nullptr});
    for (const ValueType& c : carried) ins.push_back(c);
    STRATA_RETURN_IF_ERROR(ctx.InferSubgraph(*body, ins, &outs));
    bool stable = true;
    for (int i = 0; i < ls.carried; ++i) {
      const ValueType& o = outs[1 + i];
      if (o.dtype != DType::kUndefined && carried[i].dtype != DType::kUndefined && o.dtype != carried[i].dtype)
        return ctx.Error("loop-carried value ", i, " enters the body as ", DTypeName(carried[i].dtype),
                         " but the body returns ", DTypeName(o.dtype));
      if (carried[i].dtype == DType::kUndefined) carried[i].dtype = o.dtype;
      PartialShape merged = control::MergeShapes(carried[i].shape, o.shape);
      if (!(merged == carried[i].shape)) {
        stable = false;
        carried[i].shape = round == 3 ? PartialShape::Unknown() : merged;
      }
    }
    if (stable) break;
  }
  for (int i = 0; i < ls.carried; ++i) ctx.SetOutput(i, carried[i].dtype, carried[i].shape);
  for (int k = 0; k < ls.scans; ++k) {
    const ValueType& o = outs[1 + ls.carried + k];
    ctx.SetOutput(ls.carried + k, o.dtype, control::InsertAxis(o.shape, 0, Dim()));
  }
  return Status::OK();
}

// Runs the iterations; `carried` holds the loop-carried values (initial, then final), `scans` each scan output's
// per-iteration values.
Status RunIterations(KernelContext& ctx, const graph::Graph& body, const LoopShape& ls, std::vector<Tensor>* carried,
                     std::vector<std::vector<Tensor>>* scans) {
  const Node& node = ctx.node();
  int64_t trip_count = -1;  // -1: no limit
  if (ctx.has_input(0)) {
    const Tensor& m = ctx.input(0);
    if (m.dtype() != DType::kInt64 || m.num_elements() != 1)
      return ctx.Error("M (the trip count) must be an int64 tensor with one element, got ", m.TypeString());
    trip_count = std::max<int64_t>(0, m.data<int64_t>()[0]);
  }
  bool cond = true;
  if (ctx.has_input(1)) {
    STRATA_ASSIGN_OR_RETURN(cond, control::ReadCondition(node, ctx.input(1), "cond"));
  }
  // Without the cond input the body's condition output is ignored (the spec's "for loop" and infinite loop).
  const bool use_cond = ctx.has_input(1);
  std::vector<std::pair<std::string, Tensor>> feeds(2 + ls.carried);
  for (size_t i = 0; i < feeds.size(); ++i) feeds[i].first = body.inputs[i].name;
  std::vector<Tensor> outs;
  for (int64_t it = 0; (trip_count < 0 || it < trip_count) && (!use_cond || cond); ++it) {
    feeds[0].second = Tensor::Scalar<int64_t>(it);
    feeds[1].second = Tensor::Scalar<bool>(cond);
    for (int i = 0; i < ls.carried; ++i) feeds[2 + i].second = std::move((*carried)[i]);
    Status s = ctx.RunSubgraph(body, feeds, &outs);
    if (!s.ok()) return s.WithContext(StrCat(node.Describe(), " iteration ", it));
    if (static_cast<int>(outs.size()) != 1 + ls.carried + ls.scans)
      return ctx.Error("the body produced ", outs.size(), " outputs, expected ", 1 + ls.carried + ls.scans);
    STRATA_ASSIGN_OR_RETURN(cond, control::ReadCondition(node, outs[0], "the body's condition output"));
    for (int i = 0; i < ls.carried; ++i) {
      if (outs[1 + i].dtype() != feeds[2 + i].second.dtype())
        return ctx.Error("iteration ", it, ": loop-carried value ", i, " ('", body.outputs[1 + i].name, "') entered as ",
                         feeds[2 + i].second.TypeString(), " and came back as ", outs[1 + i].TypeString());
      (*carried)[i] = std::move(outs[1 + i]);
    }
    for (int k = 0; k < ls.scans; ++k) {
      Tensor& v = outs[1 + ls.carried + k];
      auto& list = (*scans)[k];
      if (!list.empty() && (v.dtype() != list[0].dtype() || v.shape() != list[0].shape()))
        return ctx.Error("iteration ", it, ": scan output ", k, " ('", body.outputs[1 + ls.carried + k].name,
                         "') is ", v.TypeString(), " but was ", list[0].TypeString(), " in the first iteration");
      list.push_back(std::move(v));
    }
  }
  return Status::OK();
}

Status LoopCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  STRATA_ASSIGN_OR_RETURN(const graph::Graph* body, control::RequireBody(node, "body"));
  STRATA_ASSIGN_OR_RETURN(LoopShape ls, CheckLoop(node, *body, ctx.num_inputs(), ctx.num_outputs()));
  std::vector<Tensor> carried(ls.carried);
  for (int i = 0; i < ls.carried; ++i) {
    if (!ctx.has_input(2 + i)) return ctx.Error("loop-carried input ", 2 + i, " is missing");
    carried[i] = ctx.input(2 + i);
  }
  std::vector<std::vector<Tensor>> scans(ls.scans);
  STRATA_RETURN_IF_ERROR(RunIterations(ctx, *body, ls, &carried, &scans));
  for (int i = 0; i < ls.carried; ++i) STRATA_RETURN_IF_ERROR(control::EmitOutput(ctx, i, carried[i]));
  for (int k = 0; k < ls.scans; ++k) {
    const int out = ls.carried + k;
    if (!ctx.output_wanted(out)) continue;
    const auto& list = scans[k];
    if (list.empty()) {
      const graph::ValueInfo& decl = body->outputs[1 + ls.carried + k];
      if (decl.dtype == DType::kUndefined)
        return UnimplementedError(node.Describe(), ": the loop ran no iteration and the body does not declare the ",
                                  "element type of scan output '", decl.name, "'");
      STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(out, decl.dtype, control::EmptyStackShape(decl.shape, 0)));
      (void)y;
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(out, list[0].dtype(), control::InsertAxis(list[0].shape(), 0,
                                                                                             static_cast<int64_t>(list.size()))));
    for (size_t t = 0; t < list.size(); ++t) control::CopySliceIn(list[t], 0, static_cast<int64_t>(t), y);
  }
  return Status::OK();
}

}  // namespace

void RegisterLoop(OpRegistry* r) {
  OpSchema s;
  s.name = "Loop";
  s.since_version = 1;
  s.min_inputs = 0;  // M and cond are optional (empty names); the loop-carried values follow them
  s.max_inputs = -1;
  s.min_outputs = 1;
  s.max_outputs = -1;
  s.infer = LoopInfer;
  s.reference = LoopCompute;
  s.no_grad_reason = "control flow: gradients through subgraphs are not implemented";
  r->Add(std::move(s));
}

}  // namespace strata::ops
