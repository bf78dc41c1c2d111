// Optional interfaces a Kernel may also implement, about the memory of its output 0.
#pragma once

namespace strata::ops {

class InplaceKernel {
 public:
  virtual ~InplaceKernel() = default;
  // The input whose memory output 0 may take over (>= 0), or -1: the kernel reads that input in full before it writes
  // output 0 (the residual of a convolution's sum post-op) and recognises the shared memory at run time. The planner
  // gives both the same arena block when the input is read by this step alone and has the output's size.
  virtual int inplace_input() const = 0;
};

// An optional interface for kernels that make output 0 a view of an input although their op is not a view op in
// general (a Transpose that only moves dims of size 1): the planner then keeps that input's memory alive as long
// as the output, as it does for view ops.
class AliasKernel {
 public:
  virtual ~AliasKernel() = default;
  virtual int alias_input() const = 0;
};

}  // namespace strata::ops
