// Pad (opset 2, 11, 13, 18 axes): pads (or, with negative pads, crops) every axis. pads = [begin_0.., end_0..]. Before
// opset 11 pads and the float `value` are attributes; from opset 11 they are inputs (pads int64, optional scalar
// constant_value of the data type), and opset 18 adds an optional axes input that pads refer to. Modes: constant,
// reflect (mirror without repeating the edge; pads longer than the axis keep bouncing, as numpy.pad), edge. The
// opset 19 mode wrap is not supported.
#include <algorithm>

#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

enum class PadMode { kConstant, kReflect, kEdge };

StatusOr<PadMode> ParseMode(const Node& node) {
  const std::string m = node.GetString("mode", "constant");
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap") return UnimplementedError(node.Describe(), ": Pad mode 'wrap' (opset 19) is not supported");
  return InvalidArgumentError(node.Describe(), ": mode '", m, "' is not one of constant, reflect, edge");
}

// Expands pads (for `axes`, or every axis when empty) to per-dimension begin/end vectors of length `rank`.
StatusOr<std::vector<int64_t>> FullPads(const Node& node, int rank, const std::vector<int64_t>& pads,
                                        const std::vector<int64_t>& axes) {
  const size_t n = axes.empty() ? static_cast<size_t>(rank) : axes.size();
  if (pads.size() != 2 * n)
    return InvalidArgumentError(node.Describe(), ": pads ", pads, " has ", pads.size(), " values, expected ", 2 * n,
                                " (begin and end for ", n, " axes)");
  if (axes.empty()) return pads;
  if (rank == 0) return InvalidArgumentError(node.Describe(), ": a scalar has no axes ", axes, " to pad");
  STRATA_ASSIGN_OR_RETURN(std::vector<int> norm, NormalizeAxes(axes, rank, node));
  std::vector<int64_t> full(2 * rank, 0);
  for (size_t i = 0; i < n; ++i) {
    full[norm[i]] = pads[i];
    full[rank + norm[i]] = pads[n + i];
  }
  return full;
}

StatusOr<std::vector<int64_t>> PaddedDims(const Node& node, const std::vector<int64_t>& in,
                                          const std::vector<int64_t>& pads) {
  const size_t rank = in.size();
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (in[i] < 0) {
      out[i] = -1;
      continue;
    }
    if (__builtin_add_overflow(in[i], pads[i], &out[i]) || __builtin_add_overflow(out[i], pads[rank + i], &out[i]))
      return InvalidArgumentError(node.Describe(), ": pads ", pads, " overflow int64");
    if (out[i] < 0)
      return InvalidArgumentError(node.Describe(), ": pads ", pads, " remove more than the ", in[i],
                                  " elements of dimension ", i);
  }
  return out;
}

Status PadInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ParseMode(ctx.node()).status());
  const PartialShape& in = ctx.input_shape(0);
  std::optional<std::vector<int64_t>> pads, axes;
  if (ctx.opset() < 11) {
    STRATA_ASSIGN_OR_RETURN(pads, ctx.node().RequireInts("pads"));
  } else {
    STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "Pad pads"));
    STRATA_ASSIGN_OR_RETURN(pads, KnownInts(ctx, 1, "Pad pads"));
    if (ctx.has_input(2) && ctx.input_dtype(2) != DType::kUndefined && ctx.input_dtype(2) != ctx.input_dtype(0))
      return ctx.Error("constant_value is ", DTypeName(ctx.input_dtype(2)), " but data is ",
                       DTypeName(ctx.input_dtype(0)));
    if (ctx.has_input(3)) {
      STRATA_ASSIGN_OR_RETURN(axes, KnownInts(ctx, 3, "Pad axes"));
      if (!axes) pads.reset();
    } else {
      axes = std::vector<int64_t>();
    }
  }
  if (!in.rank_known || !pads) {
    ctx.SetOutput(0, ctx.input_dtype(0), UnknownShape(in.rank()));
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> full,
                          FullPads(ctx.node(), in.rank(), *pads, axes.value_or(std::vector<int64_t>())));
  std::vector<int64_t> dims;
  for (const Dim& d : in.dims) dims.push_back(d.known() ? d.value : -1);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> out, PaddedDims(ctx.node(), dims, full));
  PartialShape shape = in;
  for (int i = 0; i < in.rank(); ++i)
    if (full[i] != 0 || full[in.rank() + i] != 0) shape.dims[i] = out[i] >= 0 ? Dim(out[i]) : Dim();
  ctx.SetOutput(0, ctx.input_dtype(0), std::move(shape));
  return Status::OK();
}

// For each output coordinate of one axis: the input coordinate it reads, or -1 for the constant.
StatusOr<std::vector<int64_t>> AxisMap(const Node& node, PadMode mode, int64_t dim, int64_t begin, int64_t out_dim) {
  std::vector<int64_t> map(out_dim);
  if (dim == 0 && mode != PadMode::kConstant && out_dim > 0)
    return InvalidArgumentError(node.Describe(), ": cannot pad an empty dimension in ", node.GetString("mode", ""),
                                " mode");
  const int64_t period = 2 * (dim - 1);
  for (int64_t o = 0; o < out_dim; ++o) {
    const int64_t i = o - begin;
    if (i >= 0 && i < dim) {
      map[o] = i;
    } else if (mode == PadMode::kConstant) {
      map[o] = -1;
    } else if (mode == PadMode::kEdge || dim == 1) {
      map[o] = std::clamp<int64_t>(i, 0, dim - 1);
    } else {
      const int64_t m = ((i % period) + period) % period;
      map[o] = m < dim ? m : period - m;
    }
  }
  return map;
}

StatusOr<Tensor> PadValue(const KernelContext& ctx, DType dtype) {
  Tensor v = Tensor::Zeros(dtype, Shape{});
  if (ctx.opset() < 11) {
    if (dtype == DType::kString) return v;
    Tensor f = Tensor::Scalar<float>(ctx.node().GetFloat("value", 0.0f));
    STRATA_RETURN_IF_ERROR(ConvertElements(f, &v));
  } else if (HasNonEmptyInput(ctx, 2)) {
    const Tensor& c = ctx.input(2);
    if (c.dtype() != dtype)
      return ctx.Error("constant_value is ", DTypeName(c.dtype()), " but data is ", DTypeName(dtype));
    v = c;
  }
  return v;
}

template <typename S>
void PadCopy(const S* in, const Shape& in_shape, const std::vector<std::vector<int64_t>>& maps, const Shape& out_shape,
             S value, S* out) {
  const int rank = out_shape.rank();
  if (rank == 0) {
    out[0] = in[0];
    return;
  }
  const std::vector<int64_t> strides = Strides(in_shape);
  const int64_t inner = out_shape[rank - 1];
  const int64_t rows = out_shape.Product(0, rank - 1);
  const std::vector<int64_t>& last = maps[rank - 1];
  // Whether the last axis reads one contiguous run [b, e) of the input row with the padding value elsewhere (always so
  // in constant mode): rows are then filled and copied in blocks instead of element by element through the map
  // (Keras's ZeroPadding2D before MobileNetV3's stride-2 depthwise layers pads rows of a few elements).
  int64_t b = 0;
  while (b < inner && last[b] < 0) ++b;
  int64_t e = b;
  while (e < inner && last[e] == last[b] + (e - b)) ++e;
  bool run = true;
  for (int64_t j = e; j < inner && run; ++j) run = last[j] < 0;
  std::vector<int64_t> idx(rank - 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    bool constant = false;
    for (int d = 0; d < rank - 1; ++d) {
      const int64_t m = maps[d][idx[d]];
      constant |= m < 0;
      base += m * strides[d];
    }
    S* dst = out + r * inner;
    if (constant) {
      std::fill(dst, dst + inner, value);
    } else if (run) {
      std::fill(dst, dst + b, value);
      if (e > b) std::copy(in + base + last[b], in + base + last[b] + (e - b), dst + b);
      std::fill(dst + e, dst + inner, value);
    } else {
      for (int64_t j = 0; j < inner; ++j) dst[j] = last[j] < 0 ? value : in[base + last[j]];
    }
    for (int d = rank - 2; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
}

Status PadCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(PadMode mode, ParseMode(ctx.node()));
  std::vector<int64_t> pads, axes;
  if (ctx.opset() < 11) {
    STRATA_ASSIGN_OR_RETURN(pads, ctx.node().RequireInts("pads"));
  } else {
    if (!ctx.has_input(1)) return ctx.Error("Pad from opset 11 needs the pads input");
    STRATA_ASSIGN_OR_RETURN(pads, ReadInts(ctx.input(1), "Pad pads"));
    if (ctx.has_input(3)) {
      STRATA_ASSIGN_OR_RETURN(axes, ReadInts(ctx.input(3), "Pad axes"));
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> full, FullPads(ctx.node(), x.rank(), pads, axes));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PaddedDims(ctx.node(), x.shape().ToVector(), full));
  STRATA_ASSIGN_OR_RETURN(Shape out, ShapeFromDims(dims, ctx.node(), "Pad output shape"));
  std::vector<std::vector<int64_t>> maps;
  for (int i = 0; i < x.rank(); ++i) {
    STRATA_ASSIGN_OR_RETURN(maps.emplace_back(), AxisMap(ctx.node(), mode, x.dim(i), full[i], out[i]));
  }
  STRATA_ASSIGN_OR_RETURN(Tensor value, PadValue(ctx, x.dtype()));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out));
  if (y->num_elements() == 0) return Status::OK();
  return DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    PadCopy(StorageOf<S>(x), x.shape(), maps, out, StorageOf<S>(value)[0], StorageOf<S>(y));
    return Status::OK();
  });
}

// Constant mode: dX = Pad(dY, -pads), which drops what was added and restores (as zeros) what negative pads cropped;
// the padding value gets dY summed over the cells it filled.
// Reflect and edge modes: dY scattered back onto the elements each output copied (index map).
Status PadGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  if (node.has_input(3)) return UnimplementedError(node.Describe(), ": the gradient of Pad with axes is not supported");
  const std::string mode = node.GetString("mode", "constant");
  const std::string pads = node.opset > 0 && node.opset < 11 ? ConstInts(ctx, node.GetInts("pads")) : In(ctx, 1);
  if (mode == "constant") {
    const std::string dx = Emit1(ctx, "Pad", {ctx.output_grad(0), ENeg(ctx, pads)});
    if (ctx.needs_input_grad(0)) ctx.SetInputGrad(0, dx);
    if (node.has_input(2) && ctx.needs_input_grad(2)) {  // the padding value: dY summed over the added cells
      AttributeMap keep;
      keep["keepdims"] = Attribute::Int(0);
      AttributeMap keep2 = keep;
      const std::string all = Emit1(ctx, "ReduceSum", {ctx.output_grad(0)}, std::move(keep));
      const std::string inner = Emit1(ctx, "ReduceSum", {dx}, std::move(keep2));
      ctx.SetInputGrad(2, Emit1(ctx, "Reshape", {ESub(ctx, all, inner), Emit1(ctx, "Shape", {In(ctx, 2)})}));
    }
    return Status::OK();
  }
  ctx.SetInputGrad(0, ScatterThroughIndexMap(ctx, [&](const std::string& data) {
                     AttributeMap attrs;
                     attrs["mode"] = Attribute::String(mode);
                     return Emit1(ctx, "Pad", {data, pads}, std::move(attrs));
                   }));
  return Status::OK();
}

}  // namespace

void RegisterPad(OpRegistry* r) {
  OpSchema s;
  s.name = "Pad";
  s.since_version = 2;
  s.max_inputs = 4;
  s.infer = PadInfer;
  s.reference = PadCompute;
  s.grad = PadGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
