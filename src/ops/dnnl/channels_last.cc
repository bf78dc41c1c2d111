// strata.ChannelsLast (ops/defs/fused/channels_last.cc): the wrapped op's oneDNN kernel with its activations in
// oneDNN's nhwc layout, which the optimised convolution, pooling and normalisation implementations read and write
// directly (no reorder in or out). The backward ops of training graphs (pool gradients, convolution backward data
// and weights) join those regions too.
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"
#include "ops/dnnl/grad_kernels.h"

namespace strata::ops::onednn {

StatusOr<std::unique_ptr<Kernel>> CreateChannelsLast(const KernelInit& init) {
  const Node& node = init.node;
  const std::string op = node.GetString("op", ""), domain = node.GetString("op_domain", "");
  const std::vector<int64_t> nhwc = node.GetInts("nhwc_inputs", {0});
  const bool fused_conv = domain == "strata" && op == "FusedConv";
  if (fused_conv) {
    const bool z = node.has_input(3);
    if (nhwc != (z ? std::vector<int64_t>{0, 3} : std::vector<int64_t>{0}) &&
        !(z && nhwc == std::vector<int64_t>{3, 0}))
      return Decline("FusedConv needs X (and Z) channels-last, nothing else");
    return CreateChannelsLastConv(init, /*fused=*/true);
  }
  if (domain == "strata" && op == "QuantizedConv") {
    const bool z = node.has_input(6);
    if (nhwc != (z ? std::vector<int64_t>{0, 6} : std::vector<int64_t>{0}))
      return Decline("QuantizedConv needs x (and Z) channels-last, nothing else");
    return CreateQuantizedConvFor(init, /*nhwc=*/true);
  }
  if (domain == "strata" && (op == "MaxPoolGrad" || op == "AveragePoolGrad")) {
    if (nhwc != (op == "MaxPoolGrad" ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0}))
      return Decline(op, " needs dY (and X) channels-last, nothing else");
    return CreatePoolGradFor(init, op, /*nhwc=*/true);
  }
  if (domain == "strata" && op == "ConvBackwardData") {
    if (nhwc != std::vector<int64_t>{0}) return Decline("ConvBackwardData needs dY channels-last, nothing else");
    return CreateConvBackwardDataFor(init, /*nhwc=*/true);
  }
  if (domain == "strata" && op == "ConvBackwardFilter") {
    if (nhwc != std::vector<int64_t>{0, 1} || node.GetInt("nhwc_output", 1) != 0)
      return Decline("ConvBackwardFilter needs dY and X channels-last and a plain dW");
    return CreateConvBackwardFilterFor(init, /*nhwc=*/true);
  }
  if (node.GetInt("nhwc_output", 1) == 0) return Decline("nhwc_output=0 for ", op);
  if (!domain.empty()) return Decline("wrapped op ", domain, ".", op);
  if (nhwc != std::vector<int64_t>{0}) return Decline("only input 0 may be channels-last for ", op);
  if (op == "Conv") return CreateChannelsLastConv(init, /*fused=*/false);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool")
    return CreatePoolFor(init, op, /*nhwc=*/true);
  if (op == "BatchNormalization") return CreateBatchNormFor(init, /*nhwc=*/true);
  return Decline("no channels-last oneDNN kernel for ", op);
}

}  // namespace strata::ops::onednn
