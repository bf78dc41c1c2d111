// oneDNN reorder for Transpose (float32): the input is described with permuted strides and reordered into the
// output's plain layout.
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"

namespace strata::ops::onednn {

StatusOr<std::unique_ptr<Kernel>> CreateTranspose(const KernelInit& init) {
  const Node& node = init.node;
  if (!node.domain.empty() || node.op_type != "Transpose") return Decline("not Transpose");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  return BuildKernel(init, "Transpose", [&](PrimitiveKernel& k) -> Status {
    const Shape& x = k.input_shape(0);
    const int rank = x.rank();
    if (rank < 2) return Decline("rank ", rank, " (nothing to permute)");
    std::vector<int64_t> perm = node.GetInts("perm");
    if (perm.empty())
      for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
    if (static_cast<int>(perm.size()) != rank) return Decline("perm does not match the rank");
    Dims x_strides(rank, 1);
    for (int i = rank - 2; i >= 0; --i) x_strides[i] = x_strides[i + 1] * x[i + 1];
    Dims y_dims(rank), src_strides(rank);
    std::vector<bool> seen(rank, false);
    for (int i = 0; i < rank; ++i) {
      if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]) return Decline("perm is not a permutation");
      seen[perm[i]] = true;
      y_dims[i] = x[perm[i]];
      src_strides[i] = x_strides[perm[i]];
    }
    const Md src(y_dims, dnnl::memory::data_type::f32, src_strides), dst = PlainMd(y_dims);
    dnnl::reorder::primitive_desc pd(CpuEngine(), src, CpuEngine(), dst, Attr());
    const int s = k.Input(0, src, &src);
    k.Add(dnnl::reorder(pd), pd,
          {{DNNL_ARG_SRC, s},
           {DNNL_ARG_DST, k.Output(0, Shape(std::vector<int64_t>(y_dims.begin(), y_dims.end())), dst)}});
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
