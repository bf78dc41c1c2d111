// strata.ChannelsLast: an ONNX op (`op`, domain `op_domain`, its own attributes alongside) run on channels-last data.
// The inputs listed in `nhwc_inputs` (default [0]) and output 0 are 4-D [N, H, W, C] tensors, i.e. the op's NCHW
// operands transposed by perm [0, 2, 3, 1]; the other inputs (weights, bias, statistics) are as the op defines them.
// `nhwc_output` = 0 leaves output 0 as the op defines it too (strata.ConvBackwardFilter: activations in, weights out).
// Written by graph/passes/channels_last.cc for chains of convolutions and pools, so that oneDNN can run them in its
// preferred layout without reordering every activation in and out; the reference kernel transposes to NCHW, runs the
// wrapped op's reference kernel and transposes back.
#include "ops/defs/fused/fused_util.h"

namespace strata::ops {
namespace {

struct Wrapped {
  const OpSchema* schema = nullptr;
  Node node;               // the wrapped op (the ChannelsLast node's attributes, op type and domain replaced)
  std::vector<bool> nhwc;  // per input
  bool nhwc_output = true;
};

StatusOr<Wrapped> ReadWrapped(const Node& node, int num_inputs) {
  Wrapped w;
  w.node = node;
  w.node.op_type = node.GetString("op", "");
  w.node.domain = node.GetString("op_domain", "");
  w.schema = OpRegistry::Global().Find(w.node.domain, w.node.op_type);
  if (w.schema == nullptr || w.node.op_type == "ChannelsLast")
    return InvalidArgumentError(node.Describe(), ": `op` names no wrappable op ('", w.node.op_type, "')");
  w.nhwc.assign(num_inputs, false);
  for (int64_t i : node.GetInts("nhwc_inputs", {0})) {
    if (i < 0 || i >= num_inputs) return InvalidArgumentError(node.Describe(), ": nhwc_inputs ", i, " out of range");
    w.nhwc[i] = true;
  }
  w.nhwc_output = node.GetInt("nhwc_output", 1) != 0;
  return w;
}

PartialShape Permute(const PartialShape& s, const int (&perm)[4]) {
  if (s.rank() != 4) return s;
  return PartialShape::Of({s.dims[perm[0]], s.dims[perm[1]], s.dims[perm[2]], s.dims[perm[3]]});
}

constexpr int kToNchw[4] = {0, 3, 1, 2};  // NHWC -> NCHW
constexpr int kToNhwc[4] = {0, 2, 3, 1};  // NCHW -> NHWC

Status ChannelsLastInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Wrapped w, ReadWrapped(ctx.node(), ctx.num_inputs()));
  std::vector<ValueType> nchw(ctx.num_inputs());
  std::vector<const ValueType*> ins(ctx.num_inputs(), nullptr);
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    nchw[i] = ctx.input(i);
    if (w.nhwc[i]) {
      if (nchw[i].shape.rank_known && nchw[i].shape.rank() != 4)
        return ctx.Error("channels-last input ", i, " must be 4-D, got ", nchw[i].shape.ToString());
      nchw[i].shape = Permute(nchw[i].shape, kToNchw);
      nchw[i].value = nullptr;
    }
    ins[i] = &nchw[i];
  }
  InferContext sub(w.node, std::move(ins), ctx.num_outputs());
  STRATA_RETURN_IF_ERROR(w.schema->infer(sub));
  ctx.SetOutput(0, sub.output(0).dtype, w.nhwc_output ? Permute(sub.output(0).shape, kToNhwc) : sub.output(0).shape);
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, sub.output(i).dtype, sub.output(i).shape);
  return Status::OK();
}

// out[n, perm-indexed] for a 4-D tensor: out dims are in dims permuted by `perm`.
StatusOr<Tensor> Transpose4(const Tensor& in, const int (&perm)[4], Allocator* alloc) {
  const Shape& s = in.shape();
  const Shape out_shape{s[perm[0]], s[perm[1]], s[perm[2]], s[perm[3]]};
  STRATA_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(in.dtype(), out_shape, alloc));
  const std::vector<int64_t> st = Strides(s);
  const size_t size = DTypeSize(in.dtype());
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  int64_t o = 0;
  for (int64_t a = 0; a < out_shape[0]; ++a)
    for (int64_t b = 0; b < out_shape[1]; ++b)
      for (int64_t c = 0; c < out_shape[2]; ++c)
        for (int64_t d = 0; d < out_shape[3]; ++d, ++o) {
          const int64_t i = a * st[perm[0]] + b * st[perm[1]] + c * st[perm[2]] + d * st[perm[3]];
          std::memcpy(dst + o * size, src + i * size, size);
        }
  return out;
}

Status ChannelsLastCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Wrapped w, ReadWrapped(ctx.node(), ctx.num_inputs()));
  if (ctx.input(0).dtype() == DType::kString) return ctx.Error("string tensors have no layout");
  std::vector<Tensor> converted(ctx.num_inputs());
  std::vector<const Tensor*> ins(ctx.num_inputs(), nullptr);
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    ins[i] = &ctx.input(i);
    if (!w.nhwc[i]) continue;
    if (ctx.input(i).rank() != 4)
      return ctx.Error("channels-last input ", i, " must be 4-D, got ", ctx.input(i).shape().ToString());
    STRATA_ASSIGN_OR_RETURN(converted[i], Transpose4(ctx.input(i), kToNchw, ctx.allocator()));
    ins[i] = &converted[i];
  }
  WrappedContext sub(ctx, w.node, ins);
  STRATA_RETURN_IF_ERROR(w.schema->reference(sub));
  const Tensor& y = sub.output(0);
  if (!y.defined() || (w.nhwc_output && y.rank() != 4))
    return InternalError(ctx.node().Describe(), ": the wrapped op gave no 4-D output");
  Tensor t = y;
  if (w.nhwc_output) {
    STRATA_ASSIGN_OR_RETURN(t, Transpose4(y, kToNhwc, ctx.allocator()));
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, t.dtype(), t.shape()));
  out->CopyFrom(t);
  for (int i = 1; i < ctx.num_outputs(); ++i) {
    if (!ctx.output_wanted(i)) continue;
    const Tensor& extra = sub.output(i);
    STRATA_ASSIGN_OR_RETURN(Tensor * o, ctx.Output(i, extra.dtype(), extra.shape()));
    o->CopyFrom(extra);
  }
  return Status::OK();
}

}  // namespace

void RegisterChannelsLast(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "ChannelsLast";
  s.min_inputs = 1;
  s.max_inputs = -1;
  s.max_outputs = -1;
  s.infer = ChannelsLastInfer;
  s.reference = ChannelsLastCompute;
  s.no_grad_reason = "inference-only: the layout pass runs on graphs after autodiff";
  r->Add(std::move(s));
}

}  // namespace strata::ops
