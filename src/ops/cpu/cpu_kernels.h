// Hand-written (vectorised C++) fast kernels, attached in src/ops/kernel_list.cc ahead of the oneDNN ones where they
// do better. Like every fast kernel, each declines (UNIMPLEMENTED, with the reason) the nodes it does not compute
// exactly as the reference kernel does.
#pragma once

#include <memory>

#include "ops/op.h"

namespace strata::ops::cpu {

// max_pool_grad_nhwc.cc: strata.ChannelsLast wrapping strata.MaxPoolGrad (dY, X, dX channels-last), float32, 2-D.
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLastMaxPoolGrad(const KernelInit& init);

}  // namespace strata::ops::cpu
