// Optional interfaces a Kernel may also implement: it computes in float32 but can write output 0 in bfloat16
// (Bf16OutputKernel), or read some of its inputs in bfloat16 (Bf16InputKernel); and whether bfloat16 kernels run at
// all (NativeBf16Kernels).
#pragma once

#include "ops/op.h"

namespace strata::ops {

// For a kernel factory whose checks are written for float32: a bfloat16 value (one the plan stores so) is retyped
// float32 in `v`, and the answer is whether it was.
inline bool TakeBf16AsFloat32(ValueType& v) {
  if (v.dtype != DType::kBFloat16) return false;
  v.dtype = DType::kFloat32;
  return true;
}

// The plan stores output 0 of such a kernel in bfloat16 when every reader takes it in bfloat16 (Kernel::computes_bf16,
// which would round it to bfloat16 on the way in anyway, or Bf16InputKernel) and rebuilds the kernel with output 0
// typed bfloat16 (Plan::StoreBf16). The rebuilt kernel must then write bfloat16 (rounded to nearest even), or decline
// the node.
// The training batch-norm gradient is one: its dX is the dY of the bfloat16 backward convolutions.
class Bf16OutputKernel {
 public:
  virtual ~Bf16OutputKernel() = default;
  // Whether this kernel can (a class implementing the interface for some nodes only says false for the others).
  virtual bool writes_bf16() const { return true; }
};

// A kernel that computes in float32 but can read input `i` in bfloat16 (widened exactly to float32 as it reads). The
// plan stores a value in bfloat16 when its producer computes in bfloat16 or is a Bf16OutputKernel and every reader
// takes it in bfloat16 (Plan::StoreBf16); the rebuilt reader must then read it so, or decline the node. The
// channels-last training batch norm and its gradient are such readers of X, the output of a bfloat16 convolution
// (mixed_bfloat16 stores it in bfloat16, as Keras's policy does).
// A float32 kernel may also say so for a bfloat16 variant of its node that another kernel of the op computes (the
// oneDNN Relu and ReluGrad for the hand-written ones of src/ops/cpu/relu_bf16.cc).
class Bf16InputKernel {
 public:
  virtual ~Bf16InputKernel() = default;
  virtual bool reads_bf16(int input) const = 0;
};

// Whether the convolution and matmul kernels compute in bfloat16 under --precision bf16: oneDNN is built in and this
// CPU runs its native bfloat16 kernels (onednn::NativeBf16). The hand-written kernels that may take bfloat16
// activations under that precision (the channels-last MaxPool and GlobalAveragePool) ask it, so that without native
// kernels the model stays float32 throughout, bit-equal to --precision fp32.
bool NativeBf16Kernels();

}  // namespace strata::ops
