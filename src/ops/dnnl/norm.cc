// oneDNN batch normalization (inference: global statistics) for BatchNormalization, layer normalization for
// LayerNormalization, and across-channel LRN.
// BatchNormalization declines training mode and the running-statistics outputs; LayerNormalization declines the
// Mean/InvStdDev outputs, stash_type other than float32, and Scale/B that vary over the outer axes; LRN declines an
// even size (ONNX's window is asymmetric then, oneDNN's is not).
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"

namespace strata::ops::onednn {

StatusOr<std::unique_ptr<Kernel>> CreateBatchNorm(const KernelInit& init) {
  if (!init.node.domain.empty() || init.node.op_type != "BatchNormalization") return Decline("not BatchNormalization");
  return CreateBatchNormFor(init, /*nhwc=*/false);
}

StatusOr<std::unique_ptr<Kernel>> CreateBatchNormFor(const KernelInit& init, bool nhwc) {
  const Node& node = init.node;
  if (node.GetInt("training_mode", 0) != 0) return Decline("training mode");
  if (node.opset < 9 && node.GetInt("spatial", 1) != 1) return Decline("spatial = 0");
  if (node.opset < 7 && node.GetInt("is_test", 0) == 0) return Decline("training mode (is_test = 0)");
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.has_output(static_cast<int>(i))) return Decline("running statistics outputs (training)");
  if (node.inputs.size() != 5) return Decline("needs X, scale, B, mean, var");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  return BuildKernel(init, "BatchNormalization", [&](PrimitiveKernel& k) -> Status {
    const Shape& xt = k.input_shape(0);
    if (xt.rank() < 2 || xt.rank() > 5 || (nhwc && xt.rank() != 4)) return Decline("X must have rank 2 to 5");
    const Shape x = nhwc ? NhwcToNchw(xt) : xt;
    const int64_t c = x[1];
    for (int i = 1; i < 5; ++i)
      if (k.input_shape(i) != Shape{c}) return Decline("parameter ", i, " is not [", c, "]");
    const Md md = ActivationMd(x, nhwc), vec = PlainMd(Dims{c});
    const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                       dnnl::normalization_flags::use_shift;
    const float eps = node.GetFloat("epsilon", 1e-5f);
    dnnl::batch_normalization_forward::primitive_desc pd(
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_inference, md, eps, flags), Attr(),
        CpuEngine());
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, k.Input(0, md, &md)},
                                             {DNNL_ARG_SCALE, k.Input(1, vec)},
                                             {DNNL_ARG_SHIFT, k.Input(2, vec)},
                                             {DNNL_ARG_MEAN, k.Input(3, vec)},
                                             {DNNL_ARG_VARIANCE, k.Input(4, vec)}};
    args.emplace_back(DNNL_ARG_DST, k.Output(0, xt, md, &md));
    k.Add(dnnl::batch_normalization_forward(pd), pd, std::move(args));
    return Status::OK();
  });
}

StatusOr<std::unique_ptr<Kernel>> CreateLayerNorm(const KernelInit& init) {
  const Node& node = init.node;
  if (!node.domain.empty() || node.op_type != "LayerNormalization") return Decline("not LayerNormalization");
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.has_output(static_cast<int>(i))) return Decline("Mean/InvStdDev outputs");
  if (node.GetInt("stash_type", 1) != 1) return Decline("stash_type other than float32");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  return BuildKernel(init, "LayerNormalization", [&](PrimitiveKernel& k) -> Status {
    const Shape& x = k.input_shape(0);
    const int rank = x.rank();
    int64_t axis = node.GetInt("axis", -1);
    if (axis < 0) axis += rank;
    if (rank < 1 || axis < 0 || axis >= rank) return Decline("axis out of range");
    const int64_t outer = x.Product(0, static_cast<int>(axis)), inner = x.Product(static_cast<int>(axis), rank);
    // Scale and B must be the same for every outer index: right-aligned to X, 1 over [0, axis), X's dims after.
    for (int i = 1; i <= 2; ++i) {
      if (!node.has_input(i)) continue;
      const Shape& p = k.input_shape(i);
      if (p.rank() > rank) return Decline("parameter rank above X's");
      for (int d = 0; d < p.rank(); ++d) {
        const int xd = rank - p.rank() + d;
        if (xd < axis ? p[d] != 1 : p[d] != x[xd])
          return Decline("Scale/B ", p.ToString(), " are not one full set of values over the normalised axes of X ",
                         x.ToString());
      }
      if (p.NumElements() != inner) return Decline("Scale/B do not cover the normalised axes");
    }
    const bool has_b = node.has_input(2);
    const Md md = PlainMd(Dims{outer, inner}), vec = PlainMd(Dims{inner});
    auto flags = dnnl::normalization_flags::use_scale;
    if (has_b) flags = flags | dnnl::normalization_flags::use_shift;
    const float eps = node.GetFloat("epsilon", 1e-5f);
    dnnl::layer_normalization_forward::primitive_desc pd(
        dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, md, eps, flags), Attr(),
        CpuEngine());
    if (IsRefImpl(pd)) return Decline("oneDNN offers only its reference implementation");
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, k.Input(0, md, &md)},
                                             {DNNL_ARG_SCALE, k.Input(1, vec, &vec)}};
    if (has_b) args.emplace_back(DNNL_ARG_SHIFT, k.Input(2, vec, &vec));
    args.emplace_back(DNNL_ARG_DST, k.Output(0, x, md, &md));
    k.Add(dnnl::layer_normalization_forward(pd), pd, std::move(args));
    return Status::OK();
  });
}

StatusOr<std::unique_ptr<Kernel>> CreateLrn(const KernelInit& init) {
  const Node& node = init.node;
  if (!node.domain.empty() || node.op_type != "LRN") return Decline("not LRN");
  const int64_t size = node.GetInt("size", 0);
  if (size < 1 || size % 2 == 0) return Decline("size ", size, " (oneDNN's window is symmetric: odd sizes only)");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  return BuildKernel(init, "LRN", [&](PrimitiveKernel& k) -> Status {
    const Shape& x = k.input_shape(0);
    if (x.rank() < 3 || x.rank() > 5) return Decline("X must have rank 3 to 5");
    const Md md = PlainMd(x);
    dnnl::lrn_forward::primitive_desc pd(
        dnnl::lrn_forward::desc(dnnl::prop_kind::forward_inference, Alg::lrn_across_channels, md, size,
                                node.GetFloat("alpha", 1e-4f), node.GetFloat("beta", 0.75f),
                                node.GetFloat("bias", 1.0f)),
        Attr(), CpuEngine());
    const int src = k.Input(0, md);
    k.Add(dnnl::lrn_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, k.Output(0, x, md)}});
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
