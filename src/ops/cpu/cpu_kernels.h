// Hand-written (vectorised C++) fast kernels, attached in src/ops/kernel_list.cc ahead of the oneDNN ones where they
// do better. Like every fast kernel, each declines (UNIMPLEMENTED, with the reason) the nodes it does not compute
// exactly as the reference kernel does.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "ops/defs/nn/spatial.h"
#include "ops/op.h"

namespace strata::ops::cpu {

// concat.cc: Concat of inputs of shapes known at plan time (any fixed-size element type), row by row with memcpy.
StatusOr<std::unique_ptr<Kernel>> CreateConcat(const KernelInit& init);

// The geometry of a MaxPool node (or MaxPoolGrad, same attributes: kernel, strides, pads, dilations, ceil_mode) on X
// of NCHW shape `x`, and its output shape [N, C, OH, OW] in `out` (max_pool_grad_nhwc.cc).
StatusOr<nn::Geometry3> MaxPoolGeometry(const Node& node, const Shape& x, Shape* out);

// strata.ChannelsLast: the kernel below for the wrapped op, or Unimplemented (max_pool_grad_nhwc.cc).
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLast(const KernelInit& init);

// max_pool_grad_nhwc.cc: strata.ChannelsLast wrapping strata.MaxPoolGrad (dY, X, dX channels-last), float32, 2-D.
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastMaxPoolGrad(const KernelInit& init);
// max_pool_nhwc.cc: strata.ChannelsLast wrapping MaxPool (X, Y channels-last), float32, 2-D, without Indices; under
// --precision bf16 X and Y may also be bfloat16 (the kernel computes_bf16).
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastMaxPool(const KernelInit& init);
// global_avg_pool_nhwc.cc: strata.ChannelsLast wrapping GlobalAveragePool (X, Y channels-last) under --precision
// bf16 only: X and Y float32 or bfloat16 (the kernel computes_bf16), float32 sums, at most 4096 pixels per plane.
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastGlobalAveragePool(const KernelInit& init);
// conv_max_pool_nhwc.cc: strata.ChannelsLast wrapping strata.ConvMaxPool (X, Y channels-last), float32, 2-D, at
// most 32 input taps (C * KH * KW), no pool padding.
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastConvMaxPool(const KernelInit& init);
// depthwise_conv_nhwc.cc: strata.ChannelsLast wrapping a depthwise Conv or strata.FusedConv without residual input
// (group == C == M, X and Y channels-last), float32, 2-D, C a multiple of 16, at most 49 taps.
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastDepthwiseConv(const KernelInit& init);
// pointwise_conv_nhwc.cc: strata.ChannelsLast wrapping a 1x1 Conv or strata.FusedConv (optionally with its
// channels-last residual Z), stride 1, no padding, one group, float32, 2-D; memory-bound layers only (X or Y of at
// least 8 MiB, at most 32 output channels, or at most 32 input channels and Y of at least 64 MiB).
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastPointwiseConv(const KernelInit& init);

// depthwise_conv_backward_filter.cc: strata.ConvBackwardFilter of a depthwise convolution (group = C = M, W [C, 1,
// k...]) on plain float32 data, 1-3 spatial axes, shapes and w_shape known at plan time. Runs after the oneDNN kernel,
// which declines the depthwise nodes it would compute with its gemm-based implementation.
StatusOr<std::unique_ptr<Kernel>> CreateDepthwiseConvBackwardFilter(const KernelInit& init);
// depthwise_conv_backward_filter_nhwc.cc: strata.ChannelsLast wrapping strata.ConvBackwardFilter of a 2-D depthwise
// convolution (dY and X channels-last, plain dW), float32, any channel count, shapes and w_shape known at plan time.
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastDepthwiseConvBackwardFilter(const KernelInit& init);
// first_layer_conv_backward_filter_nhwc.cc: strata.ChannelsLast wrapping strata.ConvBackwardFilter of a 2-D
// convolution of one input channel (dY and X channels-last, plain dW), one group, 3x3, output channels a multiple
// of 16, float32, shapes and w_shape known at plan time.
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastFirstLayerConvBackwardFilter(const KernelInit& init);
// The plan-time reading both depthwise kernels share: dY and X float32 of known shapes, and W's shape from the
// w_shape input (a 1-D int64 or int32 constant); otherwise `decline`'s status, which names the kernel.
struct DepthwiseGradShapes {
  Shape dy, x, w;
};
StatusOr<DepthwiseGradShapes> ReadDepthwiseGradShapes(const KernelInit& init, Status (*decline)(std::string_view why));
// What the two channels-last filter-gradient kernels (depthwise, first layer) read at plan time beyond that: a
// strata.ConvBackwardFilter with dY and X channels-last and a plain dW, 2-D and non-empty, whose dY has the output
// shape of the forward convolution of X (channels x[3]) by W, and that convolution's geometry (2-D: index 0 is the
// unit depth axis); otherwise `decline`'s status.
struct ChannelsLastConvGrad {
  Shape dy, x, w;
  nn::Geometry3 f;
};
StatusOr<ChannelsLastConvGrad> ReadChannelsLastConvGrad(const KernelInit& init,
                                                        Status (*decline)(std::string_view why));
// Their run, after their own shape checks: the `rows` output rows split into `tasks` contiguous runs, each task
// adding its rows into its own double sums acc[taps + 1][channels] (the bias sum as tap `taps`; zeroed first, in the
// kernel's scratch of FilterGradScratchBytes) through row(r, bias, acc), `bias` telling whether dB is wanted; then
// dW (output 0, shape `w`: [channels][taps]) and dB (output 1, [channels], when wanted) in float32 from the tasks'
// sums added in task order (the result does not depend on threads).
size_t FilterGradScratchBytes(int64_t tasks, int64_t taps, int64_t channels);
Status RunFilterGradTasks(KernelContext& ctx, const Shape& w, int64_t tasks, int64_t rows, int64_t taps,
                          int64_t channels, const std::function<void(int64_t r, bool bias, double* acc)>& row);

// sum.cc: Sum of two or more float32 inputs of one shape known at plan time (no broadcasting), bit for bit the
// reference's order, split across threads.
StatusOr<std::unique_ptr<Kernel>> CreateSum(const KernelInit& init);

// relu_bf16.cc: Relu whose X or Y is a bfloat16 activation (Plan::StoreBf16; the other float32 or bfloat16), and
// strata.ReluGrad(dY, Y) with Y bfloat16 (dY, dX float32), any shape known at plan time; the reference's arithmetic.
// The float32 nodes are the oneDNN kernels'.
StatusOr<std::unique_ptr<Kernel>> CreateReluBf16(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateReluGradBf16(const KernelInit& init);

// quantize_linear.cc: QuantizeLinear of float32 with a constant per-tensor scale and zero point (uint8/int8),
// vectorised, bit-exact with the reference.
StatusOr<std::unique_ptr<Kernel>> CreateQuantizeLinear(const KernelInit& init);

// batch_norm_train.cc: BatchNormalization in training mode (batch statistics, opset >= 9) and
// strata.BatchNormalizationGrad with training_mode=1, channels-first float32 of shapes known at plan time, vectorised,
// channels split across threads.
StatusOr<std::unique_ptr<Kernel>> CreateBatchNormTraining(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateBatchNormTrainingGrad(const KernelInit& init);
// The same two wrapped in strata.ChannelsLast: X (and dY, dX) [N, H, W, C].
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastBatchNormTraining(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastBatchNormTrainingGrad(const KernelInit& init);

// Run-time choice of the variant (isa.h). The thirteen factories above that have vector code (all but CreateChannelsLast,
// CreateChannelsLastMaxPoolGrad, CreateDepthwiseConvBackwardFilter and CreateSum) exist twice, in namespaces generic
// and avx512; the ones above call the variant that CpuIsaForPlans() names when a plan is made (dispatch.cc).
enum class CpuIsa { kGeneric, kAvx512 };
std::string_view CpuIsaName(CpuIsa isa);  // "generic", "avx512"
// Whether this CPU (and the OS, which must save the AVX-512 registers) runs the avx512 variant: AVX-512 F, BW, DQ and
// VL, plus the AVX2, FMA, BMI/BMI2 and POPCNT that the variant also assumes.
bool CpuSupportsAvx512();
// The variant for plans made now: the test override if set, else the environment variable STRATA_CPU_ISA ("generic"
// forces the fallback; "avx512" requires it; "auto" or unset: avx512 where CpuSupportsAvx512()). InvalidArgument for
// another value or for avx512 on a CPU without it.
StatusOr<CpuIsa> CpuIsaForPlans();
// Tests: force a variant (std::nullopt: back to STRATA_CPU_ISA / the CPU). Forcing kAvx512 without CPU support makes
// the factories fail.
void SetCpuIsaOverrideForTesting(std::optional<CpuIsa> isa);

namespace generic {
StatusOr<std::unique_ptr<Kernel>> CreateBatchNormTraining(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateBatchNormTrainingGrad(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastBatchNormTraining(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastBatchNormTrainingGrad(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateConcat(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastMaxPool(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastGlobalAveragePool(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastConvMaxPool(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastDepthwiseConv(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastPointwiseConv(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastDepthwiseConvBackwardFilter(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastFirstLayerConvBackwardFilter(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateQuantizeLinear(const KernelInit& init);
}  // namespace generic

namespace avx512 {
StatusOr<std::unique_ptr<Kernel>> CreateBatchNormTraining(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateBatchNormTrainingGrad(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastBatchNormTraining(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastBatchNormTrainingGrad(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateConcat(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastMaxPool(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastGlobalAveragePool(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastConvMaxPool(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastDepthwiseConv(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastPointwiseConv(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastDepthwiseConvBackwardFilter(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastFirstLayerConvBackwardFilter(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateQuantizeLinear(const KernelInit& init);
}  // namespace avx512

}  // namespace strata::ops::cpu
