// An optional interface a Kernel may also implement: it computes in float32 but can write output 0 in bfloat16.
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

}  // namespace strata::ops
