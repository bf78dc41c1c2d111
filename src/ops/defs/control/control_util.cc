#include "ops/defs/control/control_util.h"

#include <algorithm>
#include <cstring>

namespace strata::ops::control {

StatusOr<const graph::Graph*> RequireBody(const Node& node, std::string_view name) {
  const Attribute* a = node.FindAttr(name);
  if (a == nullptr || a->type() != Attribute::Type::kGraph || !a->g())
    return InvalidArgumentError(node.Describe(), ": attribute '", name, "' (a graph) is required",
                                a == nullptr ? std::string() : StrCat(", got an attribute of type ",
                                                                      graph::AttributeTypeName(a->type())));
  return a->g().get();
}

PartialShape MergeShapes(const PartialShape& a, const PartialShape& b) {
  if (!a.rank_known || !b.rank_known || a.rank() != b.rank()) return PartialShape::Unknown();
  std::vector<Dim> dims(a.dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    if (a.dims[i] == b.dims[i]) dims[i] = a.dims[i];
  return PartialShape::Of(std::move(dims));
}

Status CheckBodyArity(const Node& node, const graph::Graph& body, std::string_view what, int inputs, int outputs) {
  const int ni = static_cast<int>(body.inputs.size()), no = static_cast<int>(body.outputs.size());
  if ((inputs >= 0 && ni != inputs) || no != outputs)
    return InvalidArgumentError(node.Describe(), ": the ", what, " must have ",
                                inputs >= 0 ? StrCat(inputs, " inputs and ") : std::string(), outputs,
                                " outputs, got ", ni, " inputs and ", no, " outputs");
  return Status::OK();
}

Status EmitOutput(KernelContext& ctx, int i, const Tensor& t) {
  if (!ctx.output_wanted(i)) return Status::OK();
  if (t.buffer() == nullptr || t.buffer().use_count() == 1) {
    ctx.SetOutput(i, t);
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(i, t.dtype(), t.shape()));
  y->CopyFrom(t);
  return Status::OK();
}

Shape EmptyStackShape(const PartialShape& per_iteration, int axis) {
  Shape s;
  if (per_iteration.rank_known)
    for (const Dim& d : per_iteration.dims) s.PushBack(d.known() ? d.value : 0);
  return InsertAxis(s, std::clamp(axis, 0, s.rank()), 0);
}

Shape RemoveAxis(const Shape& s, int axis) {
  Shape out;
  for (int i = 0; i < s.rank(); ++i)
    if (i != axis) out.PushBack(s[i]);
  return out;
}

Shape InsertAxis(const Shape& s, int axis, int64_t length) {
  Shape out;
  for (int i = 0; i <= s.rank(); ++i) {
    if (i == axis) out.PushBack(length);
    if (i < s.rank()) out.PushBack(s[i]);
  }
  return out;
}

PartialShape RemoveAxis(const PartialShape& s, int axis) {
  if (!s.rank_known) return s;
  std::vector<Dim> dims;
  for (int i = 0; i < s.rank(); ++i)
    if (i != axis) dims.push_back(s.dims[i]);
  return PartialShape::Of(std::move(dims));
}

PartialShape InsertAxis(const PartialShape& s, int axis, Dim length) {
  if (!s.rank_known) return s;
  std::vector<Dim> dims = s.dims;
  dims.insert(dims.begin() + std::clamp(axis, 0, s.rank()), std::move(length));
  return PartialShape::Of(std::move(dims));
}

namespace {

// Copies `count` blocks of `block` elements: block b goes from src + b * src_stride to dst + b * dst_stride.
void CopyBlocks(const Tensor& src_t, int64_t src_off, int64_t src_stride, Tensor* dst_t, int64_t dst_off,
                int64_t dst_stride, int64_t count, int64_t block) {
  if (src_t.dtype() == DType::kString) {
    const std::string* s = src_t.data<std::string>() + src_off;
    std::string* d = dst_t->data<std::string>() + dst_off;
    for (int64_t b = 0; b < count; ++b) std::copy(s + b * src_stride, s + b * src_stride + block, d + b * dst_stride);
    return;
  }
  const size_t es = DTypeSize(src_t.dtype());
  const char* s = static_cast<const char*>(src_t.raw_data()) + src_off * es;
  char* d = static_cast<char*>(dst_t->raw_data()) + dst_off * es;
  for (int64_t b = 0; b < count; ++b) std::memcpy(d + b * dst_stride * es, s + b * src_stride * es, block * es);
}

}  // namespace

void CopySliceOut(const Tensor& src, int axis, int64_t index, Tensor* dst) {
  const int64_t outer = src.shape().Product(0, axis), len = src.dim(axis);
  const int64_t inner = src.shape().Product(axis + 1, src.rank());
  if (outer * inner == 0) return;
  CopyBlocks(src, index * inner, len * inner, dst, 0, inner, outer, inner);
}

void CopySliceIn(const Tensor& src, int axis, int64_t index, Tensor* dst) {
  const int64_t outer = dst->shape().Product(0, axis), len = dst->dim(axis);
  const int64_t inner = dst->shape().Product(axis + 1, dst->rank());
  if (outer * inner == 0) return;
  CopyBlocks(src, 0, inner, dst, index * inner, len * inner, outer, inner);
}

StatusOr<bool> ReadCondition(const Node& node, const Tensor& t, std::string_view what) {
  if (t.dtype() != DType::kBool || t.num_elements() != 1)
    return InvalidArgumentError(node.Describe(), ": ", what, " must be a bool tensor with one element, got ",
                                t.TypeString());
  return t.data<bool>()[0];
}

}  // namespace strata::ops::control
