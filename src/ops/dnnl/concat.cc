// oneDNN concat for Concat (float32, every input non-empty, plain layouts).
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"

namespace strata::ops::onednn {

StatusOr<std::unique_ptr<Kernel>> CreateConcat(const KernelInit& init) {
  const Node& node = init.node;
  if (!node.domain.empty() || node.op_type != "Concat") return Decline("not Concat");
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (!node.has_input(static_cast<int>(i))) return Decline("an omitted input");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  STRATA_ASSIGN_OR_RETURN(Shape y, KnownShape(init.outputs[0], "concat_result"));
  return BuildKernel(init, "Concat", [&](PrimitiveKernel& k) -> Status {
    const int rank = y.rank();
    int64_t axis = node.GetInt("axis", 0);
    if (rank == 0 || axis < -rank || axis >= rank) return Decline("axis ", axis, " for rank ", rank);
    if (axis < 0) axis += rank;
    std::vector<Md> srcs;
    for (size_t i = 0; i < node.inputs.size(); ++i) srcs.push_back(PlainMd(k.input_shape(static_cast<int>(i))));
    const Md dst = PlainMd(y);
    dnnl::concat::primitive_desc pd(dst, static_cast<int>(axis), srcs, CpuEngine(), Attr());
    std::vector<std::pair<int, int>> args;
    for (size_t i = 0; i < srcs.size(); ++i)
      args.emplace_back(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), k.Input(static_cast<int>(i), srcs[i]));
    args.emplace_back(DNNL_ARG_DST, k.Output(0, y, dst));
    k.Add(dnnl::concat(pd), pd, std::move(args));
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
