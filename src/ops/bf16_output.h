// An optional interface a Kernel may also implement: it computes in float32 but can write output 0 in bfloat16; and
// whether bfloat16 kernels run at all (NativeBf16Kernels).
#pragma once

namespace strata::ops {

// The plan stores output 0 of such a kernel in bfloat16 when every reader computes in bfloat16 (Kernel::computes_bf16,
// which would round it to bfloat16 on the way in anyway) and rebuilds the kernel with output 0 typed bfloat16
// (Plan::StoreBf16). The rebuilt kernel must then write bfloat16 (rounded to nearest even), or decline the node.
// The training batch-norm gradient is one: its dX is the dY of the bfloat16 backward convolutions.
class Bf16OutputKernel {
 public:
  virtual ~Bf16OutputKernel() = default;
};

// Whether the convolution and matmul kernels compute in bfloat16 under --precision bf16: oneDNN is built in and this
// CPU runs its native bfloat16 kernels (onednn::NativeBf16). The hand-written kernels that may take bfloat16
// activations under that precision (the channels-last MaxPool and GlobalAveragePool) ask it, so that without native
// kernels the model stays float32 throughout, bit-equal to --precision fp32.
bool NativeBf16Kernels();

}  // namespace strata::ops
