// oneDNN pooling backward for strata.MaxPoolGrad (dY, X) and strata.AveragePoolGrad (dY, x_shape), float32, 1-3
// spatial axes, with the forward op's strides, pads, auto_pad, dilations (max) and ceil_mode.
// Max: oneDNN's backward pass routes each gradient through a workspace of arg maxima that only a forward-training
// pass produces, so the kernel runs that pass on X first (into temporaries) and then the backward pass. Inputs with
// NaN go to the reference kernel (the arg max rules differ). Windows with tied maxima may route the gradient to a
// different (equally valid) element than the reference does.
// relu_input=1 (MaxPoolGrad only): the result also passes through Relu's gradient at X, as an eltwise backward step
// in place on dX.
// Average: declines count_include_pad where ceil_mode adds padding beyond the ONNX pads (oneDNN would count it).
// Channels-last (strata.ChannelsLast wrapping them, `nhwc`): dY, X and dX are [N, H, W, C] (x_shape stays NCHW).
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/grad_kernels.h"
#include "ops/dnnl/window.h"
#include "ops/op_util.h"

namespace strata::ops::onednn {

StatusOr<std::unique_ptr<Kernel>> CreatePoolGradFor(const KernelInit& init, std::string_view op, bool nhwc) {
  const Node& node = init.node;
  const bool is_max = op == "MaxPoolGrad";
  if (!is_max && op != "AveragePoolGrad") return Decline("not a pooling gradient");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init, {1}));
  STRATA_ASSIGN_OR_RETURN(Shape y, KnownShape(init.inputs[0], "dY"));
  if (nhwc && y.rank() != 4) return Decline("channels-last needs 4-D");
  y = nhwc ? NhwcToNchw(y) : y;
  Shape x;
  if (is_max) {
    STRATA_ASSIGN_OR_RETURN(x, KnownShape(init.inputs[1], "X"));
    if (init.inputs[1].dtype != DType::kFloat32) return Decline("X is not float32");
    if (nhwc && x.rank() != 4) return Decline("channels-last needs 4-D");
    x = nhwc ? NhwcToNchw(x) : x;
  } else {
    if (!init.inputs[1].has_value()) return Decline("x_shape is not known at plan time");
    auto dims = ReadInts(*init.inputs[1].value, "x_shape");
    if (!dims.ok()) return Decline(dims.status().message());
    x = Shape(*dims);
  }
  if (x.NumElements() == 0 || y.NumElements() == 0) return Decline("empty tensors");
  const std::vector<int64_t> kernel = node.GetInts("kernel_shape");
  bool extra = false;
  STRATA_ASSIGN_OR_RETURN(Window w, ForwardWindow(node, x, y, kernel, &extra));
  Alg alg = Alg::pooling_max;
  if (!is_max) {
    const bool include = node.GetInt("count_include_pad", 0) != 0;
    if (include && extra) return Decline("count_include_pad with ceil_mode padding beyond the pads");
    alg = include ? Alg::pooling_avg_include_padding : Alg::pooling_avg_exclude_padding;
  }
  return BuildKernel(init, std::string(op), [&](PrimitiveKernel& k) -> Status {
    const Md src = ActivationMd(x, nhwc), dst = ActivationMd(y, nhwc);
    dnnl::pooling_v2_forward::primitive_desc fwd(
        dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_training, alg, src, dst, w.strides, w.kernel,
                                       w.dilations, w.pad_l, w.pad_r),
        Attr(), CpuEngine());
    dnnl::pooling_v2_backward::primitive_desc bwd(
        dnnl::pooling_v2_backward::desc(alg, src, dst, w.strides, w.kernel, w.dilations, w.pad_l, w.pad_r), Attr(),
        CpuEngine(), fwd);
    int ws = -1;
    if (is_max) {
      STRATA_RETURN_IF_ERROR(k.FallBackOnNaN({1}));
      const int xs = k.Input(1, src, &src);
      const int ys = k.Temp(fwd.dst_desc());
      ws = k.Temp(fwd.workspace_desc());
      k.Add(dnnl::pooling_v2_forward(fwd), fwd, {{DNNL_ARG_SRC, xs}, {DNNL_ARG_DST, ys}, {DNNL_ARG_WORKSPACE, ws}});
    }
    std::vector<std::pair<int, int>> args;
    args.emplace_back(DNNL_ARG_DIFF_DST, k.Input(0, bwd.diff_dst_desc(), &dst));
    if (is_max) args.emplace_back(DNNL_ARG_WORKSPACE, ws);
    const Shape x_tensor = nhwc ? Shape{x[0], x[2], x[3], x[1]} : x;
    const int dx = k.Output(0, x_tensor, bwd.diff_src_desc(), &src);
    args.emplace_back(DNNL_ARG_DIFF_SRC, dx);
    k.Add(dnnl::pooling_v2_backward(bwd), bwd, std::move(args));
    if (is_max && node.GetInt("relu_input", 0) != 0) {
      const Alg relu = Alg::eltwise_relu_use_dst_for_bwd;
      dnnl::eltwise_forward::primitive_desc hint(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, relu, src), Attr(), CpuEngine());
      dnnl::eltwise_backward::primitive_desc pd(dnnl::eltwise_backward::desc(relu, src, src), Attr(), CpuEngine(),
                                                hint);
      const int xs = k.Input(1, src, &src);
      k.Add(dnnl::eltwise_backward(pd), pd, {{DNNL_ARG_DIFF_DST, dx}, {DNNL_ARG_DST, xs}, {DNNL_ARG_DIFF_SRC, dx}});
    }
    return Status::OK();
  });
}

StatusOr<std::unique_ptr<Kernel>> CreatePoolGrad(const KernelInit& init) {
  if (init.node.domain != "strata") return Decline("not a strata op");
  return CreatePoolGradFor(init, init.node.op_type, /*nhwc=*/false);
}

}  // namespace strata::ops::onednn
