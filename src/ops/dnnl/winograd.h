// Winograd convolutions (oneDNN 2.6: jit_wino_4x3 and jit_fp32_wino_2x3 for avx512_core), shared by conv.cc
// (forward) and conv_backward.cc (backward data and weights).
//
// Winograd F(4x4, 3x3) does about 1/4 of a direct 3x3 convolution's multiplications, at the price of input, weight
// and output transforms and a rounding that differs from the direct kernel's (max error about 2e-6 of the output's
// largest magnitude). oneDNN's Winograd wants its blocked layouts (nChw16c), so in channels-last regions it costs a
// reorder in and out that the direct nhwc kernels do not. The rule below (figures in docs/engine.md, "Winograd")
// keeps a convolution direct unless it is a 3x3 stride-1 layer with enough channels on both sides for the
// transforms to pay; oneDNN may still decline it (then it stays direct too).
#pragma once

#include <string>

#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/window.h"

namespace strata::ops::onednn {

// The kernel name (Kernel::name, Plan::Describe, STRATA_VERBOSE=dispatch/profile) of a convolution that runs one of
// oneDNN's Winograd implementations.
inline constexpr const char* kWinogradKernelName = "dnnl-winograd";

// Why a convolution with NCHW shapes x, w and geometry `win` stays direct, or "" when Winograd should be tried.
// `backward`: the backward data and weights passes, which also need equal begin and end pads (oneDNN 2.6's Winograd
// backward data computes wrong values with unequal ones, e.g. pads 1,0,0,1: the op harness row "asymmetric pads").
std::string WinogradRejection(const KernelInit& init, const Shape& x, const Shape& w, const Window& win, int64_t group,
                              bool backward);

// The Winograd implementation to prefer over oneDNN's first choice for a forward convolution with NCHW shapes x, w
// and y, or "" for oneDNN's own. oneDNN 2.6 lists jit_fp32_wino_2x3 (F(2x2, 3x3)) first and takes it at batch 1;
// jit_wino_4x3 (F(4x4, 3x3)) does fewer multiplications but keeps 36 transformed weights per channel pair instead
// of 16. It is preferred when those weights take no more memory than the input and output activations: then it won
// (ResNet-50's 64 channels at 56x56, batch 1: 0.80 against 1.06 ms per layer on one thread, inside the model);
// with more weights than activations the 2x3 kernel's smaller weights won inside the model (256 channels at 14x14,
// batch 1: 1.18 against 1.48 ms, although the layer alone, its weights in cache, ran 0.83 against 0.93 ms).
std::string_view PreferredWinogradImpl(const Shape& x, const Shape& w, const Shape& y);

// The propagation kind to describe a forward Winograd convolution with: forward inference when its weights are
// constant (oneDNN transforms them once, at plan time, into its Winograd-domain layout), forward training otherwise.
// oneDNN 2.6's reorder into the Winograd-domain layout is not optimised (ResNet-18's 512 -> 512 layers at batch 16,
// two threads: 219 ms against 28 ms for the convolution), while its training-mode Winograd takes blocked weights
// (a 1.4 ms reorder) and transforms them inside the primitive at no measurable cost (28.7 ms).
dnnl::prop_kind WinogradProp(bool constant_weights);

// Logs (STRATA_VERBOSE=dispatch) why a convolution that was not given Winograd stays direct.
void LogStaysDirect(const KernelInit& init, std::string_view why);

// When the rule allows Winograd, builds its primitive descriptor with `make` (which returns it, or throws
// dnnl::error when oneDNN has no Winograd implementation for the convolution: e.g. channels that are not a multiple
// of 16, or post-ops it cannot fuse). Returns whether the convolution runs Winograd; logs why not otherwise.
template <typename Make>
bool TryWinograd(const KernelInit& init, const Shape& x, const Shape& w, const Window& win, int64_t group, bool backward,
                 Make&& make) {
  std::string why = WinogradRejection(init, x, w, win, group, backward);
  if (why.empty()) {
    try {
      const auto pd = make();
      if (!IsRefImpl(pd)) return true;
      why = StrCat("oneDNN offers only its reference implementation (", pd.impl_info_str(), ")");
    } catch (const dnnl::error& e) {
      why = StrCat("oneDNN has no Winograd implementation for it (", e.what(), ")");
    }
  }
  LogStaysDirect(init, why);
  return false;
}

}  // namespace strata::ops::onednn
