// Per-node arithmetic of the heavy kernels: the node attribute the Trainer's dtype policies (nn::DTypePolicy,
// docs/training.md "Mixed precision") write on the Conv, ConvTranspose, MatMul and Gemm nodes of a layer and on the
// gradient nodes autodiff emits for them (strata.ConvBackwardData, strata.ConvBackwardFilter, the MatMul/Gemm of the
// matmul gradients). It overrides SessionOptions::precision for that node; graph passes that fuse or wrap a node keep
// its attributes, so it reaches the kernel.
#pragma once

namespace strata::ops {

inline constexpr char kComputeDtypeAttr[] = "strata_compute_dtype";
// The oneDNN kernel computes in bfloat16 (inputs rounded to bfloat16, float32 accumulation and output).
inline constexpr char kComputeBFloat16[] = "bfloat16";
// The node's float inputs were rounded to float16 by the graph (Cast pairs); the kernel computes in float32.
inline constexpr char kComputeFloat16[] = "float16";

}  // namespace strata::ops
