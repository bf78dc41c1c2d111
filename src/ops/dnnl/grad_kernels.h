// oneDNN backward kernels for the strata-domain gradient ops (factories for KernelEntry, attached in
// src/ops/kernel_list.cc). Like the forward kernels (dnnl_kernels.h), each declines with the reason when it does not
// support a node exactly; the reference kernel of the grad op then runs. This header does not include oneDNN.
#pragma once

#include <memory>

#include "ops/op.h"

namespace strata::ops::onednn {

// conv_backward.cc: strata.ConvBackwardData (convolution backward data), strata.ConvBackwardFilter (backward
// weights, with the bias gradient when output 1 is wanted).
StatusOr<std::unique_ptr<Kernel>> CreateConvBackwardData(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateConvBackwardFilter(const KernelInit& init);
// pool_backward.cc: strata.MaxPoolGrad (forward-training pass for the workspace, then pooling backward),
// strata.AveragePoolGrad.
StatusOr<std::unique_ptr<Kernel>> CreatePoolGrad(const KernelInit& init);
// eltwise_backward.cc: strata.ReluGrad, SigmoidGrad, TanhGrad (from the forward output), GeluGrad (from the input).
StatusOr<std::unique_ptr<Kernel>> CreateEltwiseGrad(const KernelInit& init);
// softmax_backward.cc: strata.SoftmaxGrad, strata.LogSoftmaxGrad.
StatusOr<std::unique_ptr<Kernel>> CreateSoftmaxGrad(const KernelInit& init);
// norm_backward.cc: strata.BatchNormalizationGrad (training: batch statistics from a forward-training pass).
StatusOr<std::unique_ptr<Kernel>> CreateBatchNormGrad(const KernelInit& init);

// The same for strata.ChannelsLast nodes wrapping them (`nhwc`: the activations are [N, H, W, C]; channels_last.cc).
StatusOr<std::unique_ptr<Kernel>> CreateConvBackwardDataFor(const KernelInit& init, bool nhwc);
StatusOr<std::unique_ptr<Kernel>> CreateConvBackwardFilterFor(const KernelInit& init, bool nhwc);
StatusOr<std::unique_ptr<Kernel>> CreatePoolGradFor(const KernelInit& init, std::string_view op, bool nhwc);

}  // namespace strata::ops::onednn
