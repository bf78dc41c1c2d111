// Shape (opset 1, 15 with start/end) and Size: int64 metadata of the input.
#include <algorithm>

#include "ops/op_util.h"

namespace strata::ops {
namespace {

// The [start, end) slice of dimensions (opset 15), clamped as the spec says.
std::pair<int, int> ShapeRange(const Node& node, int rank) {
  int64_t start = node.GetInt("start", 0);
  int64_t end = node.GetInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {static_cast<int>(start), static_cast<int>(std::max(start, end))};
}

Status ShapeInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  if (!in.rank_known) {
    ctx.SetOutput(0, DType::kInt64, PartialShape::Of({Dim()}));
    return Status::OK();
  }
  auto [b, e] = ShapeRange(ctx.node(), in.rank());
  ctx.SetOutput(0, DType::kInt64, PartialShape::Of({Dim(e - b)}));
  return Status::OK();
}

Status ShapeCompute(KernelContext& ctx) {
  const Shape& in = ctx.input(0).shape();
  auto [b, e] = ShapeRange(ctx.node(), in.rank());
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kInt64, Shape{e - b}));
  for (int i = b; i < e; ++i) y->data<int64_t>()[i - b] = in[i];
  return Status::OK();
}

Status SizeInfer(InferContext& ctx) {
  ctx.SetOutput(0, DType::kInt64, PartialShape::Of(std::vector<Dim>{}));
  return Status::OK();
}

Status SizeCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DType::kInt64, Shape{}));
  y->data<int64_t>()[0] = ctx.input(0).num_elements();
  return Status::OK();
}

}  // namespace

void RegisterShape(OpRegistry* r) {
  OpSchema s;
  s.name = "Shape";
  s.infer = ShapeInfer;
  s.reference = ShapeCompute;
  s.no_grad_reason = "integer output";
  r->Add(std::move(s));
}

void RegisterSize(OpRegistry* r) {
  OpSchema s;
  s.name = "Size";
  s.infer = SizeInfer;
  s.reference = SizeCompute;
  s.no_grad_reason = "integer output";
  r->Add(std::move(s));
}

}  // namespace strata::ops
