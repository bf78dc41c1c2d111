// strata.ConvMaxPool: Y = MaxPool(FusedConv(X, W, B)), written by graph/passes/fuse_conv_pool.cc for a first-layer
// convolution (few input channels) whose output only a max pool reads. Inputs X, W, B (optional) and the attributes
// are strata.FusedConv's (Conv's plus `activation*`; no residual); the pool's attributes carry the prefix `pool_`
// (`pool_kernel_shape`, `pool_strides`, `pool_pads`, `pool_ceil_mode`, ...). One output: the pool's Y (no Indices).
// The reference kernel runs FusedConv's reference kernel, then MaxPool's. The fast kernel (ops/cpu/conv_max_pool_nhwc.cc,
// channels-last) computes the pooled outputs from a few rows of convolution outputs that never leave the cache.
#include "ops/defs/fused/conv_max_pool.h"

#include "ops/defs/fused/fused_util.h"

namespace strata::ops {

void SplitConvMaxPool(const Node& node, Node* conv, Node* pool) {
  constexpr std::string_view kPoolPrefix = "pool_";
  *conv = node;
  conv->domain = "strata";
  conv->op_type = "FusedConv";
  conv->attrs.clear();
  *pool = node;
  pool->domain.clear();
  pool->op_type = "MaxPool";
  pool->attrs.clear();
  pool->inputs.resize(1);
  for (const auto& [name, a] : node.attrs) {
    if (name.compare(0, kPoolPrefix.size(), kPoolPrefix) == 0) {
      pool->attrs[name.substr(kPoolPrefix.size())] = a;
    } else {
      conv->attrs[name] = a;
    }
  }
}

Status ConvMaxPoolFastFits(const Node& node, const ValueType& x, const ValueType& w) {
  if (x.dtype != DType::kFloat32 || w.dtype != DType::kFloat32) return UnimplementedError("float32 only");
  if (!w.shape.IsFullyKnown() || w.shape.rank() != 4) return UnimplementedError("W must be 4-D of known shape");
  const Shape ws = w.shape.ToShape();
  if (ws[1] * ws[2] * ws[3] > kConvMaxPoolMaxTaps)
    return UnimplementedError("more than ", kConvMaxPoolMaxTaps, " input taps (C * KH * KW = ", ws[1] * ws[2] * ws[3],
                              ")");
  Node conv, pool;
  SplitConvMaxPool(node, &conv, &pool);
  if (conv.GetInt("group", 1) != 1) return UnimplementedError("grouped convolution");
  if (conv.GetInt("transpose", 0) != 0) return UnimplementedError("transposed convolution");
  STRATA_RETURN_IF_ERROR(ReadFusedActivation(conv).status());
  const std::string pad = pool.GetString("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID") return UnimplementedError("pool auto_pad ", pad);
  for (int64_t p : pool.GetInts("pads", {}))
    if (p != 0) return UnimplementedError("a padded pool");
  for (int64_t d : pool.GetInts("dilations", {}))
    if (d != 1) return UnimplementedError("a dilated pool");
  if (pool.GetInt("storage_order", 0) != 0) return UnimplementedError("storage_order");
  return Status::OK();
}

namespace {

Status ConvMaxPoolInfer(InferContext& ctx) {
  if (ctx.num_inputs() > 3) return ctx.Error("takes X, W and an optional B (no residual), got ", ctx.num_inputs());
  if (ctx.num_outputs() != 1) return ctx.Error("has one output (the pool's Y), got ", ctx.num_outputs());
  Node conv, pool;
  SplitConvMaxPool(ctx.node(), &conv, &pool);
  const OpSchema* conv_schema = OpRegistry::Global().Find("strata", "FusedConv");
  const OpSchema* pool_schema = OpRegistry::Global().Find("", "MaxPool");
  if (conv_schema == nullptr || pool_schema == nullptr) return UnimplementedError("FusedConv or MaxPool missing");
  if (conv.GetInt("transpose", 0) != 0) return ctx.Error("a transposed convolution cannot be fused with a pool");
  std::vector<const ValueType*> ins(ctx.num_inputs(), nullptr);
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ins[i] = &ctx.input(i);
  InferContext conv_ctx(conv, std::move(ins), 1);
  STRATA_RETURN_IF_ERROR(conv_schema->infer(conv_ctx));
  ValueType mid = conv_ctx.output(0);
  mid.value = nullptr;
  InferContext pool_ctx(pool, {&mid}, 1);
  STRATA_RETURN_IF_ERROR(pool_schema->infer(pool_ctx));
  ctx.SetOutput(0, pool_ctx.output(0).dtype, pool_ctx.output(0).shape);
  return Status::OK();
}

Status ConvMaxPoolCompute(KernelContext& ctx) {
  Node conv, pool;
  SplitConvMaxPool(ctx.node(), &conv, &pool);
  const OpSchema* conv_schema = OpRegistry::Global().Find("strata", "FusedConv");
  const OpSchema* pool_schema = OpRegistry::Global().Find("", "MaxPool");
  if (conv_schema == nullptr || pool_schema == nullptr) return UnimplementedError("FusedConv or MaxPool missing");
  std::vector<const Tensor*> ins(ctx.num_inputs(), nullptr);
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ins[i] = &ctx.input(i);
  WrappedContext conv_ctx(ctx, conv, std::move(ins));
  STRATA_RETURN_IF_ERROR(conv_schema->reference(conv_ctx));
  const Tensor& mid = conv_ctx.output(0);
  if (!mid.defined()) return InternalError(ctx.node().Describe(), ": the convolution gave no output");
  WrappedContext pool_ctx(ctx, pool, {&mid});
  STRATA_RETURN_IF_ERROR(pool_schema->reference(pool_ctx));
  const Tensor& y = pool_ctx.output(0);
  if (!y.defined()) return InternalError(ctx.node().Describe(), ": the pool gave no output");
  STRATA_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, y.dtype(), y.shape()));
  out->CopyFrom(y);
  return Status::OK();
}

}  // namespace

void RegisterConvMaxPool(OpRegistry* r) {
  OpSchema s;
  s.domain = "strata";
  s.name = "ConvMaxPool";
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.max_outputs = 1;
  s.infer = ConvMaxPoolInfer;
  s.reference = ConvMaxPoolCompute;
  s.no_grad_reason = "inference-only: the fusion passes run on graphs after autodiff";
  r->Add(std::move(s));
}

}  // namespace strata::ops
