// strata.ChannelsLast (ops/defs/fused/channels_last.cc): the wrapped op's oneDNN kernel with its activations in
// oneDNN's nhwc layout, which the optimised convolution, pooling and normalisation implementations read and write
// directly (no reorder in or out).
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"

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
  if (!domain.empty()) return Decline("wrapped op ", domain, ".", op);
  if (nhwc != std::vector<int64_t>{0}) return Decline("only input 0 may be channels-last for ", op);
  if (op == "Conv") return CreateChannelsLastConv(init, /*fused=*/false);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool")
    return CreatePoolFor(init, op, /*nhwc=*/true);
  if (op == "BatchNormalization") return CreateBatchNormFor(init, /*nhwc=*/true);
  return Decline("no channels-last oneDNN kernel for ", op);
}

}  // namespace strata::ops::onednn
