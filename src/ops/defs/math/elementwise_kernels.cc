// Non-template parts of elementwise_kernels.h: legacy broadcasting, dtype classes, schema helper.
#include "ops/defs/math/elementwise_kernels.h"

namespace strata::ops::ew {
namespace {

// Where B's first dimension goes in A for legacy broadcasting; -1 when the attribute is absent (suffix rule).
StatusOr<int64_t> LegacyAxis(const Node& node, int rank_a, int rank_b) {
  if (!node.HasAttr("axis")) return rank_a - rank_b;
  int64_t axis = node.GetInt("axis", 0);
  if (axis < 0) axis += rank_a;
  if (axis < 0 || axis + rank_b > rank_a)
    return InvalidArgumentError(node.Describe(), ": broadcast axis ", node.GetInt("axis", 0), " does not fit B of rank ",
                                rank_b, " into A of rank ", rank_a);
  return axis;
}

bool LegacyRules(const Node& node) { return node.opset > 0 && node.opset < 7; }

}  // namespace

StatusOr<Shape> LegacyBroadcastShape(const Node& node, const Shape& a, const Shape& b) {
  if (!LegacyRules(node)) return b;
  if (node.GetInt("broadcast", 0) == 0) {
    if (a != b)
      return InvalidArgumentError(node.Describe(), ": opset ", node.opset, " without broadcast=1 needs equal shapes, got ",
                                  a.ToString(), " and ", b.ToString());
    return b;
  }
  if (b.rank() > a.rank())
    return InvalidArgumentError(node.Describe(), ": with broadcast=1, B (", b.ToString(),
                                ") must not have more dimensions than A (", a.ToString(), ")");
  STRATA_ASSIGN_OR_RETURN(int64_t axis, LegacyAxis(node, a.rank(), b.rank()));
  Shape out;
  for (int64_t i = 0; i < axis; ++i) out.PushBack(1);
  for (int64_t d : b) out.PushBack(d);
  while (out.rank() < a.rank()) out.PushBack(1);
  for (int i = 0; i < a.rank(); ++i)
    if (out[i] != 1 && out[i] != a[i])
      return InvalidArgumentError(node.Describe(), ": with broadcast=1, B ", b.ToString(), " at axis ", axis,
                                  " does not fit A ", a.ToString());
  return out;
}

StatusOr<PartialShape> LegacyBroadcastPartial(const Node& node, const PartialShape& a, const PartialShape& b) {
  if (!LegacyRules(node) || node.GetInt("broadcast", 0) == 0) return b;
  if (!b.rank_known) return b;
  if (!a.rank_known) return node.HasAttr("axis") ? PartialShape::Unknown() : b;
  if (b.rank() > a.rank())
    return InvalidArgumentError(node.Describe(), ": with broadcast=1, B (", b.ToString(),
                                ") must not have more dimensions than A (", a.ToString(), ")");
  STRATA_ASSIGN_OR_RETURN(int64_t axis, LegacyAxis(node, a.rank(), b.rank()));
  std::vector<Dim> dims;
  for (int64_t i = 0; i < axis; ++i) dims.emplace_back(1);
  for (const Dim& d : b.dims) dims.push_back(d);
  while (static_cast<int>(dims.size()) < a.rank()) dims.emplace_back(1);
  return PartialShape::Of(std::move(dims));
}

Status BinaryShapes(const KernelContext& ctx, Shape* b_shape, Shape* out_shape) {
  const Shape& a = ctx.input(0).shape();
  STRATA_ASSIGN_OR_RETURN(*b_shape, LegacyBroadcastShape(ctx.node(), a, ctx.input(1).shape()));
  auto s = BroadcastShapes(a, *b_shape);
  if (!s.ok()) return ctx.Error(s.status().message());
  *out_shape = *s;
  return Status::OK();
}

Status InferBinaryShape(InferContext& ctx, DType out_dtype) {
  STRATA_ASSIGN_OR_RETURN(PartialShape b, LegacyBroadcastPartial(ctx.node(), ctx.input_shape(0), ctx.input_shape(1)));
  auto s = BroadcastPartial(ctx.input_shape(0), b);
  if (!s.ok()) return ctx.Error(s.status().message());
  ctx.SetOutput(0, out_dtype == DType::kUndefined ? ctx.input_dtype(0) : out_dtype, *s);
  return Status::OK();
}

bool InClass(DType t, TypeClass c) {
  switch (c) {
    case TypeClass::kFloat: return IsFloatingPoint(t);
    case TypeClass::kSignedOrFloat: return IsFloatingPoint(t) || IsSignedInteger(t);
    case TypeClass::kNumeric: return IsFloatingPoint(t) || IsInteger(t);
    case TypeClass::kInteger: return IsInteger(t);
    case TypeClass::kUnsigned: return IsInteger(t) && !IsSignedInteger(t);
    case TypeClass::kBool: return t == DType::kBool;
    case TypeClass::kNumericOrBool: return IsFloatingPoint(t) || IsInteger(t) || t == DType::kBool;
    case TypeClass::kAny: return t != DType::kUndefined;
  }
  return false;
}

std::string_view ClassName(TypeClass c) {
  switch (c) {
    case TypeClass::kFloat: return "a float type (float16, bfloat16, float32, float64)";
    case TypeClass::kSignedOrFloat: return "a signed integer or float type";
    case TypeClass::kNumeric: return "a numeric type";
    case TypeClass::kInteger: return "an integer type";
    case TypeClass::kUnsigned: return "an unsigned integer type (uint8, uint16, uint32, uint64)";
    case TypeClass::kBool: return "bool";
    case TypeClass::kNumericOrBool: return "a numeric type or bool";
    case TypeClass::kAny: return "any type";
  }
  return "?";
}

Status CheckInputClass(const InferContext& ctx, int i, TypeClass c) {
  if (!ctx.has_input(i)) return Status::OK();
  const DType t = ctx.input_dtype(i);
  if (t == DType::kUndefined || InClass(t, c)) return Status::OK();
  return ctx.Error("input ", i, " must be ", ClassName(c), ", got ", DTypeName(t));
}

Status CheckInputClass(const KernelContext& ctx, int i, TypeClass c) {
  if (!ctx.has_input(i)) return Status::OK();
  const DType t = ctx.input(i).dtype();
  if (InClass(t, c)) return Status::OK();
  return ctx.Error("input ", i, " must be ", ClassName(c), ", got ", DTypeName(t));
}

OpSchema MakeSchema(const char* name, int since_version, int min_inputs, int max_inputs, InferFn infer,
                    ComputeFn reference, std::string no_grad_reason) {
  OpSchema s;
  s.name = name;
  s.since_version = since_version;
  s.min_inputs = min_inputs;
  s.max_inputs = max_inputs;
  s.infer = infer;
  s.reference = reference;
  s.no_grad_reason = std::move(no_grad_reason);
  return s;
}

}  // namespace strata::ops::ew
