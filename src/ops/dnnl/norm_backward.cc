// oneDNN batch normalization backward for strata.BatchNormalizationGrad (dY, X, scale, mean, var) -> dX, dScale, dB,
// float32, X of rank 2 to 5, statistics per channel (spatial=1). Training mode: a forward-training pass over X (into
// temporaries) gives the batch mean and variance the backward pass differentiates through; inference mode uses the
// mean/var inputs as constants (use_global_stats).
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/grad_kernels.h"

namespace strata::ops::onednn {

StatusOr<std::unique_ptr<Kernel>> CreateBatchNormGrad(const KernelInit& init) {
  const Node& node = init.node;
  if (node.op_type != "BatchNormalizationGrad") return Decline("not BatchNormalizationGrad");
  if (node.GetInt("spatial", 1) != 1) return Decline("spatial = 0");
  const bool training = node.GetInt("training_mode", 0) != 0;
  if (!training && (!node.has_input(3) || !node.has_input(4))) return Decline("inference mode needs mean and var");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  return BuildKernel(init, "BatchNormalizationGrad", [&](PrimitiveKernel& k) -> Status {
    const Shape& x = k.input_shape(1);
    if (x.rank() < 2 || x.rank() > 5 || k.input_shape(0) != x) return Decline("dY and X must share a rank 2-5 shape");
    const int64_t c = x[1];
    for (int i = 2; i < 5; ++i)
      if (node.has_input(i) && k.input_shape(i) != Shape{c}) return Decline("input ", i, " is not [", c, "]");
    const Md md = PlainMd(x), vec = PlainMd(Dims{c});
    const float eps = node.GetFloat("epsilon", 1e-5f);
    using F = dnnl::normalization_flags;
    const F flags = (training ? F::none : F::use_global_stats) | F::use_scale | F::use_shift;
    dnnl::batch_normalization_forward::primitive_desc hint(
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, md, eps, flags), Attr(),
        CpuEngine());
    dnnl::batch_normalization_backward::primitive_desc pd(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, md, md, eps, flags), Attr(), CpuEngine(),
        hint);
    const int xs = k.Input(1, md);
    int mean, var;
    if (training) {
      dnnl::batch_normalization_forward::primitive_desc stats(
          dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, md, eps, F::none), Attr(),
          CpuEngine());
      mean = k.Temp(stats.mean_desc());
      var = k.Temp(stats.variance_desc());
      k.Add(dnnl::batch_normalization_forward(stats), stats,
            {{DNNL_ARG_SRC, xs},
             {DNNL_ARG_DST, k.Temp(stats.dst_desc())},
             {DNNL_ARG_MEAN, mean},
             {DNNL_ARG_VARIANCE, var}});
    } else {
      mean = k.Input(3, vec);
      var = k.Input(4, vec);
    }
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, xs},
                                             {DNNL_ARG_MEAN, mean},
                                             {DNNL_ARG_VARIANCE, var},
                                             {DNNL_ARG_DIFF_DST, k.Input(0, md)},
                                             {DNNL_ARG_SCALE, k.Input(2, vec)}};
    // oneDNN's use_shift backward asks for the shift too, though the gradients do not depend on its values.
    args.emplace_back(DNNL_ARG_SHIFT, k.Temp(vec));
    args.emplace_back(DNNL_ARG_DIFF_SCALE, node.has_output(1) ? k.Output(1, Shape{c}, vec) : k.Temp(vec));
    args.emplace_back(DNNL_ARG_DIFF_SHIFT, node.has_output(2) ? k.Output(2, Shape{c}, vec) : k.Temp(vec));
    args.emplace_back(DNNL_ARG_DIFF_SRC, k.Output(0, x, md));
    k.Add(dnnl::batch_normalization_backward(pd), pd, std::move(args));
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
