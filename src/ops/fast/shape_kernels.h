// Plan-time specialised kernels for shape ops (no oneDNN): they do the reference kernels' work without reading
// shape operands, building index vectors or allocating on each run.
#pragma once

#include <memory>

#include "ops/op.h"

namespace strata::ops::fast {

// Reshape, Flatten, Squeeze, Unsqueeze, Identity on tensors: the output is a view of the input with the output
// shape inferred at plan time. Declines unknown shapes, strings and sequences/optionals.
StatusOr<std::unique_ptr<Kernel>> CreateView(const KernelInit& init);
// Transpose whose permutation keeps the order of the dims larger than 1 (it only moves dims of size 1): the output
// is a view of the input (declared through ops::AliasKernel). Declines real transposes.
StatusOr<std::unique_ptr<Kernel>> CreateTransposeView(const KernelInit& init);
// Slice with starts/ends/axes/steps known at plan time and a known input shape: block copies. Declines the rest.
StatusOr<std::unique_ptr<Kernel>> CreateSlice(const KernelInit& init);

}  // namespace strata::ops::fast
