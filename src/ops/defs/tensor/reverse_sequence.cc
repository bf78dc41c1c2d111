// ReverseSequence (opset 10): for each batch entry b, reverses the first sequence_lens[b] elements along time_axis
// and copies the rest. batch_axis (default 1) and time_axis (default 0) are 0 and 1 in some order; the input has
// rank >= 2; sequence_lens is int64 [batch] with values in [0, time].
#include "ops/defs/tensor/tensor_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

struct SeqAxes {
  int batch = 1;
  int time = 0;
};

StatusOr<SeqAxes> ReadAxes(const Node& node) {
  SeqAxes a;
  const int64_t b = node.GetInt("batch_axis", 1);
  const int64_t t = node.GetInt("time_axis", 0);
  if (!((b == 0 && t == 1) || (b == 1 && t == 0)))
    return InvalidArgumentError(node.Describe(), ": batch_axis ", b, " and time_axis ", t,
                                " must be 0 and 1 in some order");
  a.batch = static_cast<int>(b);
  a.time = static_cast<int>(t);
  return a;
}

Status ReverseSequenceInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(ReadAxes(ctx.node()).status());
  STRATA_RETURN_IF_ERROR(CheckIndexType(ctx, 1, "sequence_lens"));
  const PartialShape& in = ctx.input_shape(0);
  if (in.rank_known && in.rank() < 2)
    return ctx.Error("ReverseSequence needs an input of rank >= 2, got ", in.ToString());
  return InferSameAsInput0(ctx);
}

Status ReverseSequenceCompute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(SeqAxes axes, ReadAxes(ctx.node()));
  if (x.rank() < 2) return ctx.Error("ReverseSequence needs an input of rank >= 2, got ", x.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> lens, ReadInts(ctx.input(1), "sequence_lens"));
  const int64_t batch = x.dim(axes.batch), time = x.dim(axes.time);
  if (static_cast<int64_t>(lens.size()) != batch || ctx.input(1).rank() != 1)
    return ctx.Error("sequence_lens has shape ", ctx.input(1).shape().ToString(), ", expected [", batch, "]");
  for (int64_t len : lens)
    if (len < 0 || len > time)
      return ctx.Error("sequence length ", len, " is out of range [0, ", time, "] (the time axis)");
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  const int64_t inner = x.shape().Product(2, x.rank());
  const int64_t batch_stride = (axes.batch == 0 ? time : 1) * inner;
  const int64_t time_stride = (axes.time == 0 ? batch : 1) * inner;
  return DispatchStorage(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = StorageOf<S>(x);
    S* dst = StorageOf<S>(y);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < time; ++t) {
        const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
        std::copy_n(src + b * batch_stride + from * time_stride, inner, dst + b * batch_stride + t * time_stride);
      }
    return Status::OK();
  });
}

// A permutation of the elements: dY goes back through the index map.
Status ReverseSequenceGrad(GradContext& ctx) {
  ctx.SetInputGrad(
      0, ScatterThroughIndexMap(ctx, [&](const std::string& data) {
        return Emit1(ctx, "ReverseSequence", {data, In(ctx, 1)}, CopyAttrs(ctx.node(), {"batch_axis", "time_axis"}));
      }));
  return Status::OK();
}

}  // namespace

void RegisterReverseSequence(OpRegistry* r) {
  OpSchema s;
  s.name = "ReverseSequence";
  s.since_version = 10;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = ReverseSequenceInfer;
  s.reference = ReverseSequenceCompute;
  s.grad = ReverseSequenceGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
