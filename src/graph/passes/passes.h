// Graph optimisation passes, one per file. Each takes a topologically sorted graph and keeps it sorted and
// semantically equal (tests compare every pass against the reference interpreter).
#pragma once

#include "strata/graph.h"

namespace strata::graph {

// Evaluates nodes whose inputs are all initializers and turns their outputs into initializers.
Status FoldConstants(Graph* g);
// Removes nodes whose outputs reach no graph output, and initializers nothing reads.
Status EliminateDeadCode(Graph* g);

// DequantizeLinear -> Conv [-> Add] [-> activation] [-> QuantizeLinear] (QDQ models) -> strata.QuantizedConv, which
// runs on oneDNN's int8 kernels. Runs before constant folding (which would fold the weights' DequantizeLinear).
Status FuseQuantizedConv(Graph* g);
// DequantizeLinear -> MatMul/Gemm (constant int8 B) [-> activation] [-> QuantizeLinear] -> strata.QuantizedMatMul.
Status FuseQuantizedMatMul(Graph* g);

// Folds an inference-mode BatchNormalization into the Conv before it (new W and B initializers).
Status FuseConvBatchNorm(Graph* g);
// Conv/ConvTranspose [+ bias Add] [+ residual Add] [+ activation] -> strata.FusedConv.
Status FuseConvActivation(Graph* g);
// MatMul [+ bias Add] [+ activation] -> strata.FusedMatMul; Gemm + activation -> strata.FusedGemm.
Status FuseMatMulActivation(Graph* g);
// ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div [+ Mul gamma] [+ Add beta] over the last axis -> LayerNormalization.
Status FuseLayerNorm(Graph* g);
// Add/Sub/Mul/Div followed by binary ops and activations -> strata.FusedElementwise.
Status FuseElementwise(Graph* g);
// Regions of convolutions and pools -> strata.ChannelsLast on [N, H, W, C] activations, Transposes at the edges
// (only when strata.ChannelsLast has a fast kernel).
Status ConvertToChannelsLast(Graph* g);
// Channels-last Conv/FusedConv + channels-last MaxPool -> channels-last strata.ConvMaxPool, for the convolutions with
// few input taps that the hand-written kernel computes (only when strata.ChannelsLast has that kernel).
Status FuseConvMaxPool(Graph* g);
// Transpose(perm 0,3,1,2) -> Flatten -> Gemm/MatMul with a constant weight: the Flatten reads the channels-last value
// and the weight's K rows are permuted to match (the Transpose in front of a CNN's classifier goes away).
Status FoldFlattenTranspose(Graph* g);

// The default pipeline used by Session when SessionOptions::optimize is set: constant folding and dead code
// elimination, then (with fast kernels on) the fusion passes.
Status RunDefaultPasses(Graph* g, const SessionOptions& options);

}  // namespace strata::graph
