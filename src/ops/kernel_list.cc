// Every fast kernel, attached to its op in priority order (first that accepts a node wins; the reference kernel is
// the last resort). src/ops/dnnl/ is the only place that includes oneDNN; with STRATA_WITH_DNNL off the reference
// kernels run alone.
#include "ops/bf16_output.h"
#include "ops/fast/shape_kernels.h"
#include "ops/int8_support.h"
#include "ops/op.h"

#ifdef STRATA_WITH_DNNL
#include "ops/cpu/cpu_kernels.h"
#include "ops/dnnl/dnnl_kernels.h"
#include "ops/dnnl/grad_kernels.h"
#endif

namespace strata::ops {

#ifdef STRATA_WITH_DNNL
static void RegisterDnnlKernels(OpRegistry* r) {
  const auto add = [r](std::string_view domain, std::initializer_list<std::string_view> ops, KernelFactory f) {
    for (std::string_view op : ops) r->AddKernel(domain, op, KernelEntry{"dnnl", f});
  };
  // activation (Relu with bfloat16 activations: the hand-written kernel, which declines float32 Relu)
  r->AddKernel("", "Relu", KernelEntry{"cpu", cpu::CreateReluBf16});
  add("", {"Elu", "HardSigmoid", "HardSwish", "LeakyRelu", "Relu", "Selu", "Sigmoid", "Softplus", "Tanh"},
      onednn::CreateEltwise);
  add("strata", {"Swish"}, onednn::CreateEltwise);
  // math
  add("", {"Abs", "Clip", "Exp", "Log", "Neg", "Pow", "Sqrt"}, onednn::CreateEltwise);
  add("", {"Add", "Div", "Max", "Min", "Mul", "Sub"}, onednn::CreateBinary);
  // (Sum of same-shape float32 gradients: the hand-written kernel, multi-threaded; the reference is single-threaded)
  r->AddKernel("", "Sum", KernelEntry{"cpu", cpu::CreateSum});
  add("", {"Gemm"}, onednn::CreateGemm);
  add("", {"MatMul"}, onednn::CreateMatMul);
  // nn
  add("", {"AveragePool", "GlobalAveragePool", "GlobalMaxPool", "MaxPool"}, onednn::CreatePool);
  // (training mode: the hand-written kernel; oneDNN 2.6 has only its reference-speed `ncsp_bnorm` for channels-first)
  r->AddKernel("", "BatchNormalization", KernelEntry{"cpu", cpu::CreateBatchNormTraining});
  add("", {"BatchNormalization"}, onednn::CreateBatchNorm);
  add("", {"Conv"}, onednn::CreateConv);
  add("", {"ConvTranspose"}, onednn::CreateConvTranspose);
  add("", {"LRN"}, onednn::CreateLrn);
  add("", {"LayerNormalization"}, onednn::CreateLayerNorm);
  add("", {"LogSoftmax", "Softmax"}, onednn::CreateSoftmax);
  // reduce
  add("",
      {"ReduceL1", "ReduceL2", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"},
      onednn::CreateReduce);
  // tensor (Concat: the row-wise memcpy kernel first, about twice as fast as oneDNN's simple concat on nhwc)
  r->AddKernel("", "Concat", KernelEntry{"cpu", cpu::CreateConcat});
  add("", {"Concat"}, onednn::CreateConcat);
  add("", {"Transpose"}, onednn::CreateTranspose);
  // strata-domain fused and layout ops (hand-written channels-last kernels first: MaxPoolGrad in one vectorised pass
  // instead of oneDNN's three; MaxPool without oneDNN's NaN scan of X; ConvMaxPool, which oneDNN has no primitive for)
  r->AddKernel("strata", "ChannelsLast", KernelEntry{"cpu", cpu::CreateChannelsLast});
  add("strata", {"ChannelsLast"}, onednn::CreateChannelsLast);
  add("strata", {"FusedConv"}, onednn::CreateFusedConv);
  add("strata", {"FusedElementwise"}, onednn::CreateFusedElementwise);
  add("strata", {"FusedGemm"}, onednn::CreateFusedGemm);
  add("strata", {"FusedMatMul"}, onednn::CreateFusedMatMul);
  add("strata", {"QuantizedConv"}, onednn::CreateQuantizedConv);
  add("strata", {"QuantizedMatMul"}, onednn::CreateQuantizedMatMul);
  // quantization (QDQ models): QuantizeLinear nodes the int8 convolutions did not absorb
  r->AddKernel("", "QuantizeLinear", KernelEntry{"cpu", cpu::CreateQuantizeLinear});
  // strata-domain gradient ops (backward primitives)
  r->AddKernel("strata", "BatchNormalizationGrad", KernelEntry{"cpu", cpu::CreateBatchNormTrainingGrad});
  add("strata", {"BatchNormalizationGrad"}, onednn::CreateBatchNormGrad);
  add("strata", {"ConvBackwardData"}, onednn::CreateConvBackwardData);
  add("strata", {"ConvBackwardFilter"}, onednn::CreateConvBackwardFilter);
  r->AddKernel("strata", "ConvBackwardFilter", KernelEntry{"cpu", cpu::CreateDepthwiseConvBackwardFilter});
  r->AddKernel("strata", "ReluGrad", KernelEntry{"cpu", cpu::CreateReluGradBf16});  // a bfloat16 dY, Y or dX only
  add("strata", {"GeluGrad", "HardSwishGrad", "ReluGrad", "SigmoidGrad", "SwishGrad", "TanhGrad"}, onednn::CreateEltwiseGrad);
  add("strata", {"AveragePoolGrad", "MaxPoolGrad"}, onednn::CreatePoolGrad);
  add("strata", {"LogSoftmaxGrad", "SoftmaxGrad"}, onednn::CreateSoftmaxGrad);
}
#endif

// Plan-time specialised shape kernels (ops/fast/): views and block copies without per-run allocation.
static void RegisterFastKernels(OpRegistry* r) {
  for (std::string_view op : {"Flatten", "Identity", "Reshape", "Squeeze", "Unsqueeze"})
    r->AddKernel("", op, KernelEntry{"view", fast::CreateView});
  r->AddKernel("", "Slice", KernelEntry{"fast", fast::CreateSlice});
  r->AddKernel("", "Transpose", KernelEntry{"view", fast::CreateTransposeView});
}

bool NativeBf16Kernels() {
#ifdef STRATA_WITH_DNNL
  return onednn::NativeBf16();
#else
  return false;
#endif
}

bool Int8ConvolutionsAvailable() {
#ifdef STRATA_WITH_DNNL
  return onednn::HasVnni();
#else
  return false;
#endif
}

void RegisterAllKernels(OpRegistry* r) {
  RegisterFastKernels(r);
#ifdef STRATA_WITH_DNNL
  RegisterDnnlKernels(r);
#endif
}

}  // namespace strata::ops
