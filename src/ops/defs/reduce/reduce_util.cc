#include "ops/defs/reduce/reduce_util.h"

namespace strata::ops {

bool ReduceAxesFromInput(const Node& node) { return node.opset >= (node.op_type == "ReduceSum" ? 13 : 18); }

StatusOr<ReduceAxes> ResolveReduceAxes(const Node& node, int rank, const std::vector<int64_t>& raw) {
  ReduceAxes ax;
  ax.keepdims = node.GetInt("keepdims", 1) != 0;
  ax.reduced.assign(rank, raw.empty());
  if (raw.empty()) {
    ax.noop = node.GetInt("noop_with_empty_axes", 0) != 0;
    if (ax.noop) ax.reduced.assign(rank, false);
    return ax;
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeAxes(raw, rank, node));
  for (int a : axes) {
    if (rank == 0) continue;  // axis 0/-1 of a scalar: nothing to reduce
    ax.reduced[a] = true;
  }
  return ax;
}

StatusOr<ReduceAxes> ReduceAxesForRun(const KernelContext& ctx) {
  const Node& node = ctx.node();
  std::vector<int64_t> raw;
  if (ReduceAxesFromInput(node)) {
    if (ctx.has_input(1)) {
      const Tensor& t = ctx.input(1);
      if (t.rank() > 1) return ctx.Error("axes must be a 1-D tensor, got shape ", t.shape().ToString());
      auto v = ReadInts(t, "axes");
      if (!v.ok()) return ctx.Error(v.status().message());
      raw = std::move(v).value();
    }
  } else {
    if (ctx.has_input(1))
      return ctx.Error("axes is an attribute of ", node.op_type, " before opset ",
                       node.op_type == "ReduceSum" ? 13 : 18, " (the node has opset ", node.opset, "), not an input");
    raw = node.GetInts("axes");
  }
  return ResolveReduceAxes(node, ctx.input(0).rank(), raw);
}

Shape ReducedShape(const Shape& in, const ReduceAxes& ax) {
  Shape out;
  for (int i = 0; i < in.rank(); ++i) {
    if (!ax.reduced[i])
      out.PushBack(in[i]);
    else if (ax.keepdims)
      out.PushBack(1);
  }
  return out;
}

Status InferReduce(InferContext& ctx) {
  const Node& node = ctx.node();
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t) && !IsInteger(t))
    return ctx.Error("input must be a number tensor, got ", DTypeName(t));
  const PartialShape& in = ctx.input_shape(0);
  std::vector<int64_t> raw;
  bool axes_known = true;
  if (ReduceAxesFromInput(node)) {
    if (ctx.has_input(1)) {
      const PartialShape& as = ctx.input_shape(1);
      if (as.rank_known && as.rank() > 1) return ctx.Error("axes must be a 1-D tensor, got shape ", as.ToString());
      if (ctx.input_dtype(1) != DType::kUndefined && ctx.input_dtype(1) != DType::kInt64 &&
          ctx.input_dtype(1) != DType::kInt32)
        return ctx.Error("axes must be int64, got ", DTypeName(ctx.input_dtype(1)));
      if (const Tensor* v = ctx.input_value(1)) {
        STRATA_ASSIGN_OR_RETURN(raw, ReadInts(*v, "axes"));
      } else {
        axes_known = false;
      }
    }
  } else if (ctx.has_input(1)) {
    return ctx.Error("axes is an attribute of ", node.op_type, " before opset ", node.op_type == "ReduceSum" ? 13 : 18,
                     " (the node has opset ", node.opset, "), not an input");
  } else {
    raw = node.GetInts("axes");
  }
  const bool keepdims = node.GetInt("keepdims", 1) != 0;
  if (!in.rank_known) {
    ctx.SetOutput(0, t, PartialShape::Unknown());
    return Status::OK();
  }
  if (!axes_known) {
    // Unknown axes: with keepdims the rank stays and dimensions of size 1 stay 1; otherwise nothing is known.
    if (!keepdims) {
      ctx.SetOutput(0, t, PartialShape::Unknown());
      return Status::OK();
    }
    std::vector<Dim> dims;
    for (const Dim& d : in.dims) dims.push_back(d.known() && d.value == 1 ? d : Dim());
    ctx.SetOutput(0, t, PartialShape::Of(std::move(dims)));
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(ReduceAxes ax, ResolveReduceAxes(node, in.rank(), raw));
  std::vector<Dim> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (!ax.reduced[i])
      dims.push_back(in.dims[i]);
    else if (ax.keepdims)
      dims.emplace_back(1);
  }
  ctx.SetOutput(0, t, PartialShape::Of(std::move(dims)));
  return Status::OK();
}

OpSchema ReduceSchema(const char* name, ComputeFn reference) {
  OpSchema s;
  s.name = name;
  s.since_version = 1;
  s.min_inputs = 1;
  s.max_inputs = 2;
  s.infer = InferReduce;
  s.reference = reference;
  return s;
}

namespace {

template <typename T>
struct PlainSum {
  using Acc = SumAcc<T>;
  using Out = T;
  Acc Init() const { return Acc(0); }
  Acc Map(T v, int64_t) const { return static_cast<Acc>(ToCompute(v)); }
  Acc Combine(Acc a, Acc b) const { return static_cast<Acc>(a + b); }
  T Finalize(Acc a, int64_t, int64_t) const { return static_cast<T>(static_cast<ComputeType<T>>(a)); }
};

}  // namespace

Status SumToShape(const Tensor& x, Tensor* y) {
  const Shape& xs = x.shape();
  const Shape& ys = y->shape();
  const int offset = xs.rank() - ys.rank();
  bool ok = offset >= 0 && x.dtype() == y->dtype();
  std::vector<bool> reduced(xs.rank());
  for (int i = 0; ok && i < xs.rank(); ++i) {
    const int64_t yd = i < offset ? 1 : ys[i - offset];
    ok = yd == xs[i] || yd == 1;
    reduced[i] = yd != xs[i];
  }
  if (!ok)
    return InvalidArgumentError("cannot sum ", x.TypeString(), " to ", y->TypeString(), ": ", ys.ToString(),
                                " does not broadcast to ", xs.ToString());
  const ReducePlan plan = MakeReducePlan(xs, reduced);
  return DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ReduceWalk(plan, x.data<T>(), y->data<T>(), PlainSum<T>{});
    return Status::OK();
  });
}

ReducePlan MakeReducePlan(const Shape& in, const std::vector<bool>& reduced) {
  ReducePlan p;
  p.out_count = 1;
  p.reduce_count = 1;
  for (int i = 0; i < in.rank(); ++i) (reduced[i] ? p.reduce_count : p.out_count) *= in[i];
  if (p.out_count == 0 || p.reduce_count == 0) return p;  // ReduceWalk needs nothing else
  // Runs of adjacent dimensions with the same kind, size-1 dimensions dropped; stride = that of the run's last dim.
  std::vector<int64_t> sizes, strides;
  std::vector<bool> kinds;
  int64_t stride = 1;
  for (int i = in.rank() - 1; i >= 0; --i) {
    const int64_t d = in[i];
    if (d != 1) {
      if (!kinds.empty() && kinds.back() == reduced[i]) {
        sizes.back() *= d;
      } else {
        sizes.push_back(d);
        strides.push_back(stride);
        kinds.push_back(reduced[i]);
      }
    }
    stride *= d;
  }
  // The vectors above run innermost first.
  if (kinds.empty()) return p;  // every dimension has size 1: pattern B with inner = 1
  p.inner_reduced = kinds[0];
  p.inner = sizes[0];
  for (int r = static_cast<int>(sizes.size()) - 1; r >= 1; --r) {
    if (kinds[r]) {
      p.red_sizes.push_back(sizes[r]);
      p.red_strides.push_back(strides[r]);
    } else {
      p.kept_sizes.push_back(sizes[r]);
      p.kept_strides.push_back(strides[r]);
    }
  }
  return p;
}

}  // namespace strata::ops
