// Slice (opset 1, 10, 11, 13): takes start:end:step along some axes. Opset 1 reads starts/ends/axes attributes;
// from opset 10 they are inputs (starts, ends, optional axes and steps). Negative starts/ends count from the back,
// then are clamped to [0, dim] for positive steps and to [-1, dim - 1] for negative steps; an axis missing from axes
// is taken whole. Steps must be non-zero.
#include <algorithm>

#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// One axis: the first index and the number of elements taken from a dimension of size `dim`.
struct AxisSlice {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

AxisSlice ResolveAxis(int64_t start, int64_t end, int64_t step, int64_t dim) {
  AxisSlice s;
  s.step = step;
  if (dim == 0) return s;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    s.count = end > start ? (end - start - 1) / step + 1 : 0;  // no overflow for huge steps
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    // |step| as unsigned: -(step + 1) cannot overflow, even for INT64_MIN.
    const uint64_t magnitude = static_cast<uint64_t>(-(step + 1)) + 1;
    s.count = start > end ? static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / magnitude) + 1 : 0;
  }
  s.start = s.count > 0 ? start : 0;
  return s;
}

// Fills defaults and checks lengths/steps; `rank` normalises the axes.
Status CompleteArgs(const Node& node, int rank, SliceArgs* a) {
  if (a->starts.size() != a->ends.size())
    return InvalidArgumentError(node.Describe(), ": starts ", a->starts, " and ends ", a->ends,
                                " must have the same length");
  const size_t n = a->starts.size();
  if (rank == 0 && n > 0) return InvalidArgumentError(node.Describe(), ": cannot slice a scalar");
  if (a->axes.empty() && n > 0)
    for (size_t i = 0; i < n; ++i) a->axes.push_back(static_cast<int64_t>(i));
  if (a->steps.empty()) a->steps.assign(n, 1);
  if (a->axes.size() != n || a->steps.size() != n)
    return InvalidArgumentError(node.Describe(), ": starts, ends, axes and steps must have the same length, got ", n,
                                ", ", n, ", ", a->axes.size(), ", ", a->steps.size());
  STRATA_ASSIGN_OR_RETURN(std::vector<int> norm, NormalizeAxes(a->axes, rank, node));
  for (size_t i = 0; i < n; ++i) {
    if (a->steps[i] == 0) return InvalidArgumentError(node.Describe(), ": steps ", a->steps, " contains 0");
    a->axes[i] = norm[i];
  }
  return Status::OK();
}

Status SliceInfer(InferContext& ctx) {
  const PartialShape& in = ctx.input_shape(0);
  SliceArgs a;
  bool known = true;
  if (ctx.opset() < 10) {
    STRATA_ASSIGN_OR_RETURN(a.starts, ctx.node().RequireInts("starts"));
    STRATA_ASSIGN_OR_RETURN(a.ends, ctx.node().RequireInts("ends"));
    a.axes = ctx.node().GetInts("axes");
  } else {
    std::vector<int64_t>* dst[] = {&a.starts, &a.ends, &a.axes, &a.steps};
    const char* names[] = {"Slice starts", "Slice ends", "Slice axes", "Slice steps"};
    for (int i = 1; i <= 4; ++i) {
      if (!ctx.has_input(i)) continue;
      STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, i, names[i - 1]));
      STRATA_ASSIGN_OR_RETURN(auto v, KnownInts(ctx, i, names[i - 1]));
      if (v)
        *dst[i - 1] = std::move(*v);
      else
        known = false;
    }
    if (!ctx.has_input(1) || !ctx.has_input(2))
      return ctx.Error("Slice from opset 10 needs the starts and ends inputs");
  }
  if (!in.rank_known || !known) {
    ctx.SetOutput(0, ctx.input_dtype(0), UnknownShape(in.rank()));
    return Status::OK();
  }
  STRATA_RETURN_IF_ERROR(CompleteArgs(ctx.node(), in.rank(), &a));
  PartialShape out = in;
  for (size_t i = 0; i < a.axes.size(); ++i) {
    const Dim& d = in.dims[a.axes[i]];
    out.dims[a.axes[i]] = d.known() ? Dim(ResolveAxis(a.starts[i], a.ends[i], a.steps[i], d.value).count) : Dim();
  }
  ctx.SetOutput(0, ctx.input_dtype(0), std::move(out));
  return Status::OK();
}

Status SliceCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  SliceArgs a;
  if (ctx.opset() < 10) {
    STRATA_ASSIGN_OR_RETURN(a.starts, ctx.node().RequireInts("starts"));
    STRATA_ASSIGN_OR_RETURN(a.ends, ctx.node().RequireInts("ends"));
    a.axes = ctx.node().GetInts("axes");
  } else {
    if (!ctx.has_input(1) || !ctx.has_input(2))
      return ctx.Error("Slice from opset 10 needs the starts and ends inputs");
    STRATA_ASSIGN_OR_RETURN(a.starts, ReadInts(ctx.input(1), "Slice starts"));
    STRATA_ASSIGN_OR_RETURN(a.ends, ReadInts(ctx.input(2), "Slice ends"));
    if (ctx.has_input(3)) {
      STRATA_ASSIGN_OR_RETURN(a.axes, ReadInts(ctx.input(3), "Slice axes"));
    }
    if (ctx.has_input(4)) {
      STRATA_ASSIGN_OR_RETURN(a.steps, ReadInts(ctx.input(4), "Slice steps"));
    }
  }
  STRATA_RETURN_IF_ERROR(CompleteArgs(ctx.node(), x.rank(), &a));
  const std::vector<int64_t> in_strides = Strides(x.shape());
  Shape out = x.shape();
  std::vector<int64_t> strides = in_strides;
  int64_t base = 0;
  for (size_t i = 0; i < a.axes.size(); ++i) {
    const int axis = static_cast<int>(a.axes[i]);
    const AxisSlice s = ResolveAxis(a.starts[i], a.ends[i], a.steps[i], x.dim(axis));
    out[axis] = s.count;
    base += s.start * in_strides[axis];
    strides[axis] = s.count > 1 ? in_strides[axis] * s.step : 0;
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), out));
  if (y->num_elements() == 0) return Status::OK();
  return DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    StridedGather(StorageOf<S>(x), base, strides, out, StorageOf<S>(y));
    return Status::OK();
  });
}

// dX: dY scattered back to the positions it was sliced from (zeros elsewhere). Opset < 10 attributes are passed as
// the inputs of the opset 10+ form.
Status SliceGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  std::vector<std::string> args(node.inputs.begin() + 1, node.inputs.end());
  if (node.opset > 0 && node.opset < 10) {
    args = {ConstInts(ctx, node.GetInts("starts")), ConstInts(ctx, node.GetInts("ends"))};
    if (node.HasAttr("axes")) args.push_back(ConstInts(ctx, node.GetInts("axes")));
  }
  ctx.SetInputGrad(0, ScatterThroughIndexMap(ctx, [&](const std::string& data) {
                     std::vector<std::string> ins{data};
                     ins.insert(ins.end(), args.begin(), args.end());
                     return Emit1(ctx, "Slice", ins);
                   }));
  return Status::OK();
}

}  // namespace

void RegisterSlice(OpRegistry* r) {
  OpSchema s;
  s.name = "Slice";
  s.max_inputs = 5;
  s.infer = SliceInfer;
  s.reference = SliceCompute;
  s.grad = SliceGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
