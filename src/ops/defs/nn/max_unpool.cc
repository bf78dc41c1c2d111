// MaxUnpool (opset 9, 11): the partial inverse of MaxPool. X (N, C, D1..Dn) holds pooled values and I (int64, same
// shape) their indices, flattened over the whole unpooled tensor of the default shape
// (N, C, (in - 1) * stride - pad_begin - pad_end + kernel, ...). Every other element is zero. With the optional
// output_shape input the default-shaped result is placed at the origin of a zero tensor of that shape, as the ONNX
// reference does (each output_shape dimension must be at least the default one). Indices outside the default shape are
// an error; a repeated index keeps the last value. Float element types.
#include <cstring>

#include "ops/defs/nn/nn_util.h"
#include "ops/defs/nn/spatial.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

constexpr nn::SpatialOptions kUnpoolOptions{.kernel_from_attr = true, .allow_dilations = false};

// The default (inferred) output shape; -1 for unknown dims.
StatusOr<std::vector<int64_t>> DefaultShape(const Node& node, const std::vector<int64_t>& x) {
  const int spatial = static_cast<int>(x.size()) - 2;
  STRATA_ASSIGN_OR_RETURN(nn::SpatialAttrs a, nn::ReadSpatialAttrs(node, spatial, kUnpoolOptions));
  std::vector<int64_t> out{x[0], x[1]};
  for (int i = 0; i < spatial; ++i) {
    const int64_t in = x[2 + i];
    const int64_t d = (in - 1) * a.strides[i] - a.pads[i] - a.pads[spatial + i] + a.kernel[i];
    if (in >= 0 && d < 1)
      return InvalidArgumentError(node.Describe(), ": pads ", a.pads, " leave no output along spatial dimension ", i,
                                  " (input length ", in, ")");
    out.push_back(in < 0 ? -1 : d);
  }
  return out;
}

StatusOr<std::vector<int64_t>> ReadOutputShape(const Node& node, const Tensor& t, const std::vector<int64_t>& def) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> s, ReadInts(t, "MaxUnpool output_shape"));
  if (s.size() != def.size())
    return InvalidArgumentError(node.Describe(), ": output_shape must have ", def.size(), " values (X's rank), got ",
                                s);
  for (size_t i = 0; i < s.size(); ++i)
    if ((def[i] >= 0 && s[i] < def[i]) || s[i] < 0)
      return InvalidArgumentError(node.Describe(), ": output_shape ", s, " is smaller than the unpooled shape ", def);
  return s;
}

Status MaxUnpoolInfer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t)) return ctx.Error("X must be a float tensor, got ", DTypeName(t));
  if (ctx.input_dtype(1) != DType::kInt64 && ctx.input_dtype(1) != DType::kUndefined)
    return ctx.Error("I must be int64, got ", DTypeName(ctx.input_dtype(1)));
  const PartialShape& x = ctx.input_shape(0);
  STRATA_ASSIGN_OR_RETURN(int spatial, nn::SpatialRankOf(ctx.node(), x));
  if (spatial < 0) {
    ctx.SetOutput(0, t, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> xd;
  for (const Dim& d : x.dims) xd.push_back(d.known() ? d.value : -1);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> def, DefaultShape(ctx.node(), xd));
  if (ctx.has_input(2)) {
    if (const Tensor* os = ctx.input_value(2)) {
      STRATA_ASSIGN_OR_RETURN(def, ReadOutputShape(ctx.node(), *os, def));
    } else {
      def.assign(def.size(), -1);
    }
  }
  std::vector<Dim> dims;
  for (size_t i = 0; i < def.size(); ++i) dims.push_back(def[i] >= 0 ? Dim(def[i]) : i == 0 ? x.dims[0] : Dim());
  ctx.SetOutput(0, t, PartialShape::Of(std::move(dims)));
  return Status::OK();
}

Status MaxUnpoolCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  if (!IsFloatingPoint(x.dtype())) return ctx.Error("X must be a float tensor, got ", DTypeName(x.dtype()));
  if (ind.dtype() != DType::kInt64 || ind.shape() != x.shape())
    return ctx.Error("I must be int64 with X's shape ", x.shape().ToString(), ", got ", ind.TypeString());
  if (x.rank() < 3) return ctx.Error("X must have rank >= 3 (N, C, spatial...), got ", x.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> def, DefaultShape(node, x.shape().ToVector()));
  std::vector<int64_t> out = def;
  if (ctx.has_input(2)) {
    STRATA_ASSIGN_OR_RETURN(out, ReadOutputShape(node, ctx.input(2), def));
  }
  STRATA_RETURN_IF_ERROR(nn::CheckElementCount(node, Shape(out)));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), Shape(out)));
  std::memset(y->raw_data(), 0, y->byte_size());
  const Shape def_shape(def);
  const int64_t def_size = def_shape.NumElements();
  const std::vector<int64_t> def_strides = Strides(def_shape), out_strides = Strides(Shape(out));
  const bool same = def == out;
  const int64_t* pi = ind.data<int64_t>();
  const int64_t n = x.num_elements();
  return DispatchFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y->data<T>();
    for (int64_t e = 0; e < n; ++e) {
      int64_t idx = pi[e];
      if (idx < 0 || idx >= def_size)
        return ctx.Error("index ", idx, " at position ", e, " of I is outside the unpooled shape ",
                         def_shape.ToString(), " (expected [0, ", def_size, "))");
      if (!same) {  // re-ravel the default-shape coordinates into the output shape
        int64_t o = 0;
        for (size_t d = 0; d < def.size(); ++d) {
          o += idx / def_strides[d] * out_strides[d];
          idx %= def_strides[d];
        }
        idx = o;
      }
      py[idx] = px[e];
    }
    return Status::OK();
  });
}

// Each input element went to the position its index names: dX = dY (flattened) gathered at the indices. With an
// output_shape input (the result placed in a larger zero tensor) the gradient is not supported.
Status MaxUnpoolGrad(GradContext& ctx) {
  if (ctx.node().has_input(2))
    return UnimplementedError(ctx.node().Describe(), ": the gradient of MaxUnpool with output_shape is not supported");
  const std::string flat = Emit1(ctx, "Reshape", {ctx.output_grad(0), ConstInts(ctx, {-1})});
  ctx.SetInputGrad(0, Emit1(ctx, "Gather", {flat, In(ctx, 1)}));
  return Status::OK();
}

}  // namespace

void RegisterMaxUnpool(OpRegistry* r) {
  OpSchema s;
  s.name = "MaxUnpool";
  s.since_version = 11;
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = MaxUnpoolInfer;
  s.reference = MaxUnpoolCompute;
  s.grad = MaxUnpoolGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
