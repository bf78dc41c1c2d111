// The oneDNN fast kernels (factories for KernelEntry), attached to their ops in src/ops/kernel_list.cc. Each factory
// returns Unimplemented with the reason when it does not support a node exactly (the next kernel, or the reference
// kernel, runs instead). This header does not include oneDNN; only src/ops/dnnl/*.cc do.
#pragma once

#include <memory>

#include "ops/op.h"

namespace strata::ops::onednn {

// conv.cc: Conv, ConvTranspose, strata.FusedConv.
StatusOr<std::unique_ptr<Kernel>> CreateConv(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateConvTranspose(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateFusedConv(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateQuantizedConv(const KernelInit& init);  // strata.QuantizedConv, int8
StatusOr<std::unique_ptr<Kernel>> CreateQuantizedMatMul(const KernelInit& init);  // strata.QuantizedMatMul, int8
// Whether oneDNN may use VNNI here (quantized_conv.cc; see ops/int8_support.h).
bool HasVnni();
// Whether this CPU runs oneDNN's native bfloat16 kernels (dnnl_common.cc; see ops/bf16_output.h).
bool NativeBf16();
// channels_last.cc: strata.ChannelsLast (Conv, FusedConv, pools and BatchNormalization on [N, H, W, C] data).
StatusOr<std::unique_ptr<Kernel>> CreateChannelsLast(const KernelInit& init);
// matmul.cc: MatMul, Gemm, strata.FusedMatMul, strata.FusedGemm.
StatusOr<std::unique_ptr<Kernel>> CreateMatMul(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateGemm(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateFusedMatMul(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateFusedGemm(const KernelInit& init);
// pool.cc: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool.
StatusOr<std::unique_ptr<Kernel>> CreatePool(const KernelInit& init);
// norm.cc: BatchNormalization (inference), LayerNormalization, LRN.
StatusOr<std::unique_ptr<Kernel>> CreateBatchNorm(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateLayerNorm(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateLrn(const KernelInit& init);
// softmax.cc: Softmax, LogSoftmax.
StatusOr<std::unique_ptr<Kernel>> CreateSoftmax(const KernelInit& init);
// eltwise.cc: unary activations and math (the op type selects the algorithm), Pow with a constant exponent 2.
StatusOr<std::unique_ptr<Kernel>> CreateEltwise(const KernelInit& init);
// binary.cc: Add, Sub, Mul, Div, Min, Max, strata.FusedElementwise.
StatusOr<std::unique_ptr<Kernel>> CreateBinary(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> CreateFusedElementwise(const KernelInit& init);
// reduce.cc: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare.
StatusOr<std::unique_ptr<Kernel>> CreateReduce(const KernelInit& init);
// concat.cc: Concat.
StatusOr<std::unique_ptr<Kernel>> CreateConcat(const KernelInit& init);
// transpose.cc: Transpose.
StatusOr<std::unique_ptr<Kernel>> CreateTranspose(const KernelInit& init);

}  // namespace strata::ops::onednn
