// Whether this build and CPU run QDQ convolutions on exact int8 kernels (graph/passes/fuse_quantized.cc asks before
// it rewrites a QDQ model; a small header so that the graph stratum need not include the kernel lists).
#pragma once

namespace strata::ops {

// True when oneDNN is built in and may use VNNI (AVX512-VNNI or AVX-VNNI, as DNNL_MAX_CPU_ISA allows). oneDNN's
// int8 convolutions without VNNI multiply with VPMADDUBSW, whose 16-bit pair sums saturate for full-range uint8
// activations times int8 weights (255 * 127 * 2 > 32767): they would give wrong numbers for standard QDQ models,
// so without VNNI the QDQ model runs as written (float32 convolutions of the dequantized values).
bool Int8ConvolutionsAvailable();

}  // namespace strata::ops
