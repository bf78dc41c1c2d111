#include "ops/grad_util.h"

#include "ops/op_util.h"

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

Status CheckNumpyBroadcast(const GradContext& ctx) {
  const Node& n = ctx.node();
  if (n.opset > 0 && n.opset < 7 && n.GetInt("broadcast", 0) != 0 && n.HasAttr("axis")) {
    const PartialShape& a = ctx.input_type(0).shape;
    const PartialShape& b = ctx.input_type(1).shape;
    if (!a.rank_known || !b.rank_known || n.GetInt("axis", 0) != a.rank() - b.rank())
      return UnimplementedError(n.Describe(), ": gradient of opset ", n.opset,
                                " broadcasting with attribute axis (B not aligned as a suffix) is not supported");
  }
  return Status::OK();
}

std::string ConstInts(GradContext& ctx, std::vector<int64_t> values) {
  return ctx.Constant(Tensor::FromVector<int64_t>(values));
}

std::string ScalarConst(GradContext& ctx, DType t, double value) {
  switch (t) {
    case DType::kFloat64:
      return ctx.Constant(Tensor::Scalar<double>(value));
    case DType::kFloat16:
      return ctx.Constant(Tensor::Scalar<Float16>(Float16(static_cast<float>(value))));
    case DType::kBFloat16:
      return ctx.Constant(Tensor::Scalar<BFloat16>(BFloat16(static_cast<float>(value))));
    default:
      return ctx.Constant(Tensor::Scalar<float>(static_cast<float>(value)));
  }
}

std::optional<std::vector<int64_t>> KnownInputInts(const GradContext& ctx, int i) {
  if (!ctx.node().has_input(i)) return std::nullopt;
  const ValueType& vt = ctx.input_type(i);
  if (!vt.has_value()) return std::nullopt;
  auto v = ReadInts(*vt.value, "value");
  if (!v.ok()) return std::nullopt;
  return *v;
}

std::optional<double> KnownInputScalar(const GradContext& ctx, int i) {
  if (!ctx.node().has_input(i)) return std::nullopt;
  const ValueType& vt = ctx.input_type(i);
  if (!vt.has_value()) return std::nullopt;
  auto v = ReadScalar(*vt.value, "value");
  if (!v.ok()) return std::nullopt;
  return *v;
}

std::string ZerosLike(GradContext& ctx, const std::string& like, DType t) {
  Tensor zero = Tensor::Zeros(IsFloatingPoint(t) ? t : DType::kFloat32, Shape{1});
  AttributeMap attrs;
  attrs["value"] = Attribute::TensorValue(zero);
  return Emit1(ctx, "ConstantOfShape", {Emit1(ctx, "Shape", {like})}, std::move(attrs));
}

std::string UnreduceGrad(GradContext& ctx, const std::string& g, const std::string& axes, bool keepdims,
                         const std::string& like, bool expand) {
  std::string r = g;
  if (!keepdims && !axes.empty()) r = Emit1(ctx, "Unsqueeze", {r, axes});
  if (expand) r = Emit1(ctx, "Expand", {r, Emit1(ctx, "Shape", {like})});
  return r;
}

std::string InputsPerOutput(GradContext& ctx) {
  const PartialShape& in = ctx.input_type(0).shape;
  const PartialShape& out = ctx.output_type(0).shape;
  const DType t = InType(ctx, 0);
  if (in.IsFullyKnown() && out.IsFullyKnown()) {
    const int64_t n = out.ToShape().NumElements();
    return ScalarConst(ctx, t, n == 0 ? 0.0 : static_cast<double>(in.ToShape().NumElements()) / n);
  }
  const auto size_as_t = [&](const std::string& v) {
    AttributeMap to;
    to["to"] = Attribute::Int(static_cast<int64_t>(t));
    return Emit1(ctx, "Cast", {Emit1(ctx, "Size", {v})}, std::move(to));
  };
  return EDiv(ctx, size_as_t(In(ctx, 0)), size_as_t(Out(ctx, 0)));
}

Status ReshapeBackGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, "Reshape", {ctx.output_grad(0), Emit1(ctx, "Shape", {In(ctx, 0)})}));
  return Status::OK();
}

std::string ScatterThroughIndexMap(GradContext& ctx, const std::function<std::string(const std::string&)>& forward) {
  const std::string& x = In(ctx, 0);
  const std::string shape = Emit1(ctx, "Shape", {x});
  const std::string count = Emit1(ctx, "Size", {x});
  const std::string iota =
      Emit1(ctx, "Range", {ctx.Constant(Tensor::Scalar<int64_t>(0)), count, ctx.Constant(Tensor::Scalar<int64_t>(1))});
  const std::string positions = forward(Emit1(ctx, "Reshape", {iota, shape}));
  const std::string flat = ConstInts(ctx, {-1});
  AttributeMap zero_attrs;
  zero_attrs["value"] = Attribute::TensorValue(Tensor::Zeros(InType(ctx, 0), Shape{1}));
  const std::string zeros =
      Emit1(ctx, "ConstantOfShape", {Emit1(ctx, "Reshape", {count, ConstInts(ctx, {1})})}, std::move(zero_attrs));
  AttributeMap scatter_attrs;
  scatter_attrs["axis"] = Attribute::Int(0);
  scatter_attrs["reduction"] = Attribute::String("add");
  const std::string dx =
      Emit1(ctx, "ScatterElements",
            {zeros, Emit1(ctx, "Reshape", {positions, flat}), Emit1(ctx, "Reshape", {ctx.output_grad(0), flat})},
            std::move(scatter_attrs));
  return Emit1(ctx, "Reshape", {dx, shape});
}

AttributeMap CopyAttrs(const Node& node, std::initializer_list<std::string_view> names) {
  AttributeMap out;
  for (std::string_view n : names)
    if (const Attribute* a = node.FindAttr(n)) out[std::string(n)] = *a;
  return out;
}

}  // namespace strata::ops
