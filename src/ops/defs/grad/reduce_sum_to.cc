// strata.ReduceSumTo(X, shape): sums X over the dimensions along which `shape` was broadcast to X's shape, giving a
// tensor of `shape`. The gradient of every broadcasting op ends in it. When no dimension is reduced the output is
// a view of X.
#include "ops/op_util.h"

namespace strata::ops {
namespace {

// Checks that `target` broadcasts to `in` (right-aligned; each target dim is 1 or equal).
Status CheckTarget(const Node& node, const Shape& in, const Shape& target) {
  if (target.rank() > in.rank())
    return InvalidArgumentError(node.Describe(), ": target shape ", target.ToString(), " has more dimensions than ",
                                in.ToString());
  const int off = in.rank() - target.rank();
  for (int i = 0; i < target.rank(); ++i)
    if (target[i] != 1 && target[i] != in[off + i])
      return InvalidArgumentError(node.Describe(), ": target shape ", target.ToString(), " does not broadcast to ",
                                  in.ToString());
  return Status::OK();
}

Status ReduceSumToInfer(InferContext& ctx) {
  const Tensor* shape = ctx.input_value(1);
  if (shape == nullptr) {
    const PartialShape& s = ctx.input_shape(1);
    PartialShape out;
    if (s.rank_known && s.rank() == 1 && s.dims[0].known()) out = PartialShape::Of(std::vector<Dim>(s.dims[0].value));
    ctx.SetOutput(0, ctx.input_dtype(0), out);
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInts(*shape, "ReduceSumTo shape"));
  std::vector<Dim> out(dims.begin(), dims.end());
  ctx.SetOutput(0, ctx.input_dtype(0), PartialShape::Of(std::move(out)));
  return Status::OK();
}

Status ReduceSumToCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInts(ctx.input(1), "ReduceSumTo shape"));
  const Shape target(dims);
  STRATA_RETURN_IF_ERROR(CheckTarget(ctx.node(), x.shape(), target));
  if (target.NumElements() == x.num_elements()) {  // nothing to sum: same data, new shape
    STRATA_ASSIGN_OR_RETURN(Tensor view, x.Reshaped(target));
    ctx.SetOutput(0, std::move(view));
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), target));
  // Accumulate every element of X into the element of Y it came from (Y strides are 0 on reduced dims).
  const std::vector<int64_t> ystrides = BroadcastStrides(target, x.shape());
  return DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    std::vector<C> acc(static_cast<size_t>(target.NumElements()), C(0));
    const T* px = x.data<T>();
    std::array<std::vector<int64_t>, 1> st{ystrides};
    ForEachBroadcast<1>(x.shape(), st, [&](int64_t i, const std::array<int64_t, 1>& off) { acc[off[0]] += C(px[i]); });
    T* py = y->data<T>();
    for (size_t i = 0; i < acc.size(); ++i) py[i] = T(acc[i]);
    return Status::OK();
  });
}

// d/dX of ReduceSumTo is dY broadcast back to X's shape.
Status ReduceSumToGrad(GradContext& ctx) {
  std::string shape = ctx.Emit("Shape", {ctx.node().inputs[0]})[0];
  ctx.SetInputGrad(0, ctx.Emit("Expand", {ctx.output_grad(0), shape})[0]);
  return Status::OK();
}

}  // namespace

void RegisterReduceSumTo(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "ReduceSumTo";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = ReduceSumToInfer;
  s.reference = ReduceSumToCompute;
  s.grad = ReduceSumToGrad;
  s.view_input = 0;
  r->Add(std::move(s));
}

}  // namespace strata::ops
