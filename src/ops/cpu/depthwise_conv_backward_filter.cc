// strata.ConvBackwardFilter (dY, X, w_shape) -> dW[, dB] of a depthwise convolution (group = input channels = output
// channels, W [C, 1, k...]) on plain (NCHW) float32 data, 1-3 spatial axes: per channel, each tap's weight gradient
// is the sum over images and output positions of dY times the X value that tap read.
// Why: for the depthwise 5x5 layers of MobileNetV3Small at 32x32 (outputs 1x1 to 2x2, padding 2), oneDNN 2.6 has no
// jit implementation of backward weights and takes its gemm-based one (im2col of mostly padding per image), which was
// half of oneDNN's time in a training step (ONEDNN_VERBOSE, `strata train-bench --model_name MobileNetV3Small`). The
// oneDNN kernel declines those nodes (dnnl/conv_backward.cc); this one then runs ahead of the reference.
// Sums are taken in double per tap and rounded once: the reference (a float gemm) agrees to float rounding.
#include <algorithm>
#include <vector>

#include "core/parallel.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/defs/grad/conv_grad_util.h"

namespace strata::ops::cpu {
namespace {

Status Decline(std::string_view why) { return UnimplementedError("cpu depthwise ConvBackwardFilter: ", why); }

class DepthwiseConvBackwardFilter final : public Kernel {
 public:
  DepthwiseConvBackwardFilter(const nn::Geometry3& g, Shape x, Shape y, Shape w)
      : g_(g), x_(std::move(x)), y_(std::move(y)), w_(std::move(w)) {
    // Per output column ow: the row offset of its first tap (ow * stride - pad) and its valid taps [lo, hi), computed
    // once instead of per row and image.
    for (int64_t ow = 0; ow < g.out[2]; ++ow) {
      const int64_t start = ow * g.stride[2] - g.pad_begin[2];
      int64_t lo, hi;
      nn::ValidTaps(start, g.kernel[2], g.dilation[2], g.in[2], &lo, &hi);
      cols_.push_back({start, lo, hi});
    }
  }

  std::string_view name() const override { return "cpu"; }

  Status Run(KernelContext& ctx) const override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (x.shape() != x_ || dy.shape() != y_)
      return ctx.Error("dY ", dy.shape().ToString(), " and X ", x.shape().ToString(),
                       " differ from the shapes the plan was made for (dY ", y_.ToString(), ", X ", x_.ToString(), ")");
    STRATA_ASSIGN_OR_RETURN(Tensor * dw, ctx.Output(0, DType::kFloat32, w_));
    float* pdb = nullptr;
    if (ctx.output_wanted(1)) {
      STRATA_ASSIGN_OR_RETURN(Tensor * db, ctx.Output(1, DType::kFloat32, Shape{w_[0]}));
      pdb = db->data<float>();
    }
    const float* px = x.data<float>();
    const float* pdy = dy.data<float>();
    float* pdw = dw->data<float>();
    const int64_t n_batch = x_[0], c = x_[1], in = g_.in_size(), out = g_.out_size(), k = g_.kernel_size();
    const int64_t per_channel = std::max<int64_t>(1, n_batch * out * k);
    ParallelFor(c, std::max<int64_t>(1, 16384 / per_channel), [&](int64_t begin, int64_t end) {
      std::vector<double> acc(static_cast<size_t>(k));
      for (int64_t ch = begin; ch < end; ++ch) {
        std::fill(acc.begin(), acc.end(), 0.0);
        double bias = 0.0;
        for (int64_t n = 0; n < n_batch; ++n) {
          const float* xp = px + (n * c + ch) * in;
          const float* yp = pdy + (n * c + ch) * out;
          Accumulate(xp, yp, acc.data());
          if (pdb != nullptr)
            for (int64_t i = 0; i < out; ++i) bias += yp[i];
        }
        for (int64_t t = 0; t < k; ++t) pdw[ch * k + t] = static_cast<float>(acc[t]);
        if (pdb != nullptr) pdb[ch] = static_cast<float>(bias);
      }
    });
    return Status::OK();
  }

 private:
  // acc[tap] += sum over output positions of dY * X at that tap, for one image and channel (planes xp, yp): per
  // output position, its valid taps (a small layer's whole window) read straight from X's plane.
  void Accumulate(const float* xp, const float* yp, double* acc) const {
    const nn::Geometry3& g = g_;
    const int64_t kh_n = g.kernel[1], kw_n = g.kernel[2], in_h = g.in[1], in_w = g.in[2];
    const int64_t dil_d = g.dilation[0], dil_h = g.dilation[1], dil_w = g.dilation[2];
    for (int64_t od = 0; od < g.out[0]; ++od) {
      int64_t d_lo, d_hi;
      const int64_t sd = od * g.stride[0] - g.pad_begin[0];
      nn::ValidTaps(sd, g.kernel[0], dil_d, g.in[0], &d_lo, &d_hi);
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        int64_t h_lo, h_hi;
        const int64_t sh = oh * g.stride[1] - g.pad_begin[1];
        nn::ValidTaps(sh, kh_n, dil_h, in_h, &h_lo, &h_hi);
        const float* yrow = yp + (od * g.out[1] + oh) * g.out[2];
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          const Cols& col = cols_[static_cast<size_t>(ow)];
          const double dy = yrow[ow];
          for (int64_t kd = d_lo; kd < d_hi; ++kd) {
            for (int64_t kh = h_lo; kh < h_hi; ++kh) {
              const int64_t base = ((sd + kd * dil_d) * in_h + sh + kh * dil_h) * in_w + col.off;  // may be < 0
              double* a = acc + (kd * kh_n + kh) * kw_n;
              for (int64_t kw = col.lo; kw < col.hi; ++kw) a[kw] += dy * static_cast<double>(xp[base + kw * dil_w]);
            }
          }
        }
      }
    }
  }

  struct Cols {
    int64_t off, lo, hi;
  };
  nn::Geometry3 g_;
  Shape x_, y_, w_;
  std::vector<Cols> cols_;
};

}  // namespace

StatusOr<DepthwiseGradShapes> ReadDepthwiseGradShapes(const KernelInit& init, Status (*decline)(std::string_view why)) {
  if (init.inputs.size() != 3) return decline("needs dY, X and w_shape");
  if (init.inputs[0].dtype != DType::kFloat32 || init.inputs[1].dtype != DType::kFloat32)
    return decline("float32 dY and X only");
  if (!init.inputs[0].shape.IsFullyKnown() || !init.inputs[1].shape.IsFullyKnown())
    return decline("shapes not known at plan time");
  const ValueType& v = init.inputs[2];
  if (!v.has_value()) return decline("w_shape is not known at plan time");
  const Tensor& t = *v.value;
  if (t.rank() != 1 || (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32))
    return decline("w_shape must be a 1-D int64 or int32 tensor");
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    dims.push_back(t.dtype() == DType::kInt64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i]);
  return DepthwiseGradShapes{init.inputs[0].shape.ToShape(), init.inputs[1].shape.ToShape(), Shape(dims)};
}

StatusOr<ChannelsLastConvGrad> ReadChannelsLastConvGrad(const KernelInit& init,
                                                        Status (*decline)(std::string_view why)) {
  const Node& node = init.node;
  if (node.GetString("op_domain", "") != "strata" || node.GetString("op", "") != "ConvBackwardFilter")
    return decline("not a channels-last strata.ConvBackwardFilter");
  if (node.GetInts("nhwc_inputs", {0}) != std::vector<int64_t>{0, 1} || node.GetInt("nhwc_output", 1) != 0)
    return decline("needs dY and X channels-last and a plain dW");
  STRATA_ASSIGN_OR_RETURN(const DepthwiseGradShapes shapes, ReadDepthwiseGradShapes(init, decline));
  const Shape &x = shapes.x, &y = shapes.dy, &w = shapes.w;
  if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4) return decline("2-D convolutions only (dY, X and W of rank 4)");
  if (x.NumElements() == 0 || y.NumElements() == 0) return decline("empty tensors");
  auto cg = convgrad::ForwardConv(node, Shape{x[0], x[3], x[1], x[2]}, w);
  if (!cg.ok()) return decline(cg.status().message());
  if (cg->y != Shape{y[0], y[3], y[1], y[2]}) return decline("dY does not have the convolution's output shape");
  return ChannelsLastConvGrad{y, x, w, cg->g};
}

namespace {

// dW[o, k] (and dB[o] when `db` is not null) from the per-task sums [task][tap, then dB as tap `taps`][channel].
void WriteFilterGradSums(const double* sums, int64_t tasks, int64_t taps, int64_t channels, float* dw, float* db) {
  const int64_t stride = (taps + 1) * channels;
  for (int64_t o = 0; o < channels; ++o) {
    for (int64_t k = 0; k <= taps; ++k) {
      if (k == taps && db == nullptr) break;
      double s = 0.0;
      for (int64_t t = 0; t < tasks; ++t) s += sums[t * stride + k * channels + o];
      if (k < taps) {
        dw[o * taps + k] = static_cast<float>(s);
      } else {
        db[o] = static_cast<float>(s);
      }
    }
  }
}

}  // namespace

size_t FilterGradScratchBytes(int64_t tasks, int64_t taps, int64_t channels) {
  return sizeof(double) * static_cast<size_t>(tasks * (taps + 1) * channels) + 64;
}

Status RunFilterGradTasks(KernelContext& ctx, const Shape& w, int64_t tasks, int64_t rows, int64_t taps,
                          int64_t channels, const std::function<void(int64_t r, bool bias, double* acc)>& row) {
  STRATA_ASSIGN_OR_RETURN(Tensor * dw, ctx.Output(0, DType::kFloat32, w));
  float* pdb = nullptr;
  if (ctx.output_wanted(1)) {
    STRATA_ASSIGN_OR_RETURN(Tensor * db, ctx.Output(1, DType::kFloat32, Shape{channels}));
    pdb = db->data<float>();
  }
  STRATA_ASSIGN_OR_RETURN(void* scratch, ctx.Scratch(FilterGradScratchBytes(tasks, taps, channels)));
  double* sums = static_cast<double*>(scratch);
  const int64_t stride = (taps + 1) * channels;
  const bool bias = pdb != nullptr;
  ParallelFor(tasks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      double* acc = sums + t * stride;
      std::fill(acc, acc + stride, 0.0);
      for (int64_t r = rows * t / tasks; r < rows * (t + 1) / tasks; ++r) row(r, bias, acc);
    }
  });
  WriteFilterGradSums(sums, tasks, taps, channels, dw->data<float>(), pdb);
  return Status::OK();
}

StatusOr<std::unique_ptr<Kernel>> CreateDepthwiseConvBackwardFilter(const KernelInit& init) {
  const Node& node = init.node;
  STRATA_ASSIGN_OR_RETURN(const DepthwiseGradShapes shapes, ReadDepthwiseGradShapes(init, Decline));
  const Shape &x = shapes.x, &y = shapes.dy, &w = shapes.w;
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) return Decline("X and W must have rank 3 to 5");
  const int64_t group = node.GetInt("group", 1);
  if (group <= 1 || group != x[1] || w[0] != group || w[1] != 1) return Decline("not a depthwise convolution");
  if (x.NumElements() == 0 || y.NumElements() == 0) return Decline("empty tensors");
  auto cg = convgrad::ForwardConv(node, x, w);
  if (!cg.ok()) return Decline(cg.status().message());
  if (cg->y != y) return Decline("dY does not have the convolution's output shape");
  return std::unique_ptr<Kernel>(std::make_unique<DepthwiseConvBackwardFilter>(cg->g, x, y, w));
}

}  // namespace strata::ops::cpu
