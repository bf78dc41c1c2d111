// oneDNN pooling for MaxPool and AveragePool (float32, 1-3 spatial axes; pads, auto_pad, strides, dilations,
// ceil_mode), and reductions for GlobalAveragePool / GlobalMaxPool.
// Max pools fall back on the reference kernel for inputs holding NaN (oneDNN's NaN handling differs).
// strata.ChannelsLast pools read and write [N, H, W, C] (oneDNN's nhwc).
// Declines: MaxPool's Indices output, AveragePool with count_include_pad where ceil_mode adds padding beyond the ONNX
// pads (oneDNN would count it), and what oneDNN has no implementation for.
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"
#include "ops/dnnl/window.h"

namespace strata::ops::onednn {
namespace {

// Averages over at most this many elements (oneDNN sums sequentially in float32; see reduce.cc).
constexpr int64_t kMaxAveraged = 4096;

// x, y: NCHW shapes; `nhwc`: the tensors are channels-last.
Status BuildGlobalPool(PrimitiveKernel& k, const Shape& x, const Shape& y, Alg alg, bool nhwc) {
  if (x.rank() < 3) return Decline("X must have rank >= 3");
  if (alg == Alg::reduction_mean && x.Product(2, x.rank()) > kMaxAveraged)
    return Decline("averages ", x.Product(2, x.rank()), " elements (float32 accuracy: at most ", kMaxAveraged, ")");
  Shape yd = x;
  for (int i = 2; i < yd.rank(); ++i) yd[i] = 1;
  const Md src = ActivationMd(x, nhwc), dst = ActivationMd(yd, nhwc);
  if (dst.get_size() != static_cast<size_t>(y.NumElements()) * sizeof(float)) return Decline("unexpected output");
  const Shape y_tensor = nhwc ? Shape{y[0], y[2], y[3], y[1]} : y;
  dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(alg, src, dst, 0.0f, 0.0f), Attr(), CpuEngine());
  if (IsRefImpl(pd)) {
    // oneDNN reduces only some layouts with jit code (not nhwc): a pooling window over the whole plane instead.
    const int sp = x.rank() - 2;
    const Dims kernel(x.begin() + 2, x.end()), ones(sp, 1), zeros(sp, 0);
    const Alg pool = alg == Alg::reduction_max ? Alg::pooling_max : Alg::pooling_avg_exclude_padding;
    dnnl::pooling_v2_forward::primitive_desc ppd(
        dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, pool, src, dst, ones, kernel, zeros, zeros,
                                       zeros),
        Attr(), CpuEngine());
    if (!IsRefImpl(ppd)) {
      const int s = k.Input(0, src, &src);
      k.Add(dnnl::pooling_v2_forward(ppd), ppd, {{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, k.Output(0, y_tensor, dst, &dst)}});
      return Status::OK();
    }
  }
  const int s = k.Input(0, src, &src);
  k.Add(dnnl::reduction(pd), pd, {{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, k.Output(0, y_tensor, dst, &dst)}});
  return Status::OK();
}

Status BuildPool(PrimitiveKernel& k, const KernelInit& init, std::string_view op, const Shape& x, const Shape& y,
                 bool nhwc) {
  const Node& node = init.node;
  const bool is_max = op == "MaxPool";
  if (is_max && node.has_output(1)) return Decline("MaxPool's Indices output is left to the reference kernel");
  if (is_max) STRATA_RETURN_IF_ERROR(k.FallBackOnNaN({0}));  // an all-NaN window: NaN there, -FLT_MAX in oneDNN
  const std::vector<int64_t> kernel = node.GetInts("kernel_shape");
  bool extra = false;
  STRATA_ASSIGN_OR_RETURN(Window w, ForwardWindow(node, x, y, kernel, &extra));
  Alg alg = Alg::pooling_max;
  if (!is_max) {
    const bool include = node.GetInt("count_include_pad", 0) != 0;
    if (include && extra) return Decline("count_include_pad with ceil_mode padding beyond the pads");
    alg = include ? Alg::pooling_avg_include_padding : Alg::pooling_avg_exclude_padding;
  }
  const Md src = ActivationMd(x, nhwc), dst = ActivationMd(y, nhwc);
  dnnl::pooling_v2_forward::primitive_desc pd(
      dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, alg, src, dst, w.strides, w.kernel,
                                     w.dilations, w.pad_l, w.pad_r),
      Attr(), CpuEngine());
  const int s = k.Input(0, src, &src);
  const Shape y_tensor = nhwc ? Shape{y[0], y[2], y[3], y[1]} : y;
  k.Add(dnnl::pooling_v2_forward(pd), pd, {{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, k.Output(0, y_tensor, dst, &dst)}});
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreatePoolFor(const KernelInit& init, std::string_view op, bool nhwc) {
  const Node& node = init.node;
  if (op == "MaxPool" && node.has_output(1)) return Decline("MaxPool's Indices output is left to the reference");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  STRATA_ASSIGN_OR_RETURN(Shape x, KnownShape(init.inputs[0], "X"));
  STRATA_ASSIGN_OR_RETURN(Shape y, KnownShape(init.outputs[0], "Y"));
  if (nhwc) {
    if (x.rank() != 4 || y.rank() != 4) return Decline("channels-last needs 4-D");
    x = NhwcToNchw(x);
    y = NhwcToNchw(y);
  }
  return BuildKernel(init, op, [&](PrimitiveKernel& k) -> Status {
    if (op == "GlobalAveragePool") return BuildGlobalPool(k, x, y, Alg::reduction_mean, nhwc);
    if (op == "GlobalMaxPool") {
      STRATA_RETURN_IF_ERROR(k.FallBackOnNaN({0}));  // the reference skips NaN unless all are; oneDNN does not
      return BuildGlobalPool(k, x, y, Alg::reduction_max, nhwc);
    }
    if (op == "MaxPool" || op == "AveragePool") return BuildPool(k, init, op, x, y, nhwc);
    return Decline(op, " is not a pooling op");
  });
}

StatusOr<std::unique_ptr<Kernel>> CreatePool(const KernelInit& init) {
  if (!init.node.domain.empty()) return Decline("not an ONNX op");
  return CreatePoolFor(init, init.node.op_type, /*nhwc=*/false);
}

}  // namespace strata::ops::onednn
