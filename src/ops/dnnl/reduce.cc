// oneDNN reduction for ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2 and
// ReduceSumSquare (float32). Axes come from the attribute (before opset 18; ReduceSum before 13) or a constant
// input; keepdims only changes the output's shape, not its memory. Declines runtime axes, empty axes with
// noop_with_empty_axes, reductions that reduce nothing, and sums over more than kMaxSummed elements per output
// (oneDNN accumulates sequentially in float32: over 2^20 ones of 0.1 it is off by 6e-4, the reference sums pairwise).
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"

namespace strata::ops::onednn {
namespace {

constexpr int64_t kMaxSummed = 4096;

struct ReduceOp {
  std::string_view name;
  Alg alg;
  float p;
};
constexpr ReduceOp kReduceOps[] = {
    {"ReduceSum", Alg::reduction_sum, 0},        {"ReduceMean", Alg::reduction_mean, 0},
    {"ReduceMax", Alg::reduction_max, 0},        {"ReduceMin", Alg::reduction_min, 0},
    {"ReduceProd", Alg::reduction_mul, 0},       {"ReduceL1", Alg::reduction_norm_lp_sum, 1},
    {"ReduceL2", Alg::reduction_norm_lp_sum, 2}, {"ReduceSumSquare", Alg::reduction_norm_lp_power_p_sum, 2},
};

StatusOr<std::vector<int64_t>> ReadAxes(const KernelInit& init) {
  const Node& node = init.node;
  const bool axes_input = node.opset >= 18 || (node.op_type == "ReduceSum" && node.opset >= 13);
  if (!axes_input) return node.GetInts("axes");
  if (!node.has_input(1)) return std::vector<int64_t>{};
  if (init.inputs.size() < 2 || !init.inputs[1].has_value()) return Decline("axes are not a constant");
  const Tensor& t = *init.inputs[1].value;
  std::vector<int64_t> axes;
  if (t.dtype() != DType::kInt64) return Decline("axes must be int64");
  for (int64_t a : t.values<int64_t>()) axes.push_back(a);
  return axes;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateReduce(const KernelInit& init) {
  const Node& node = init.node;
  const ReduceOp* op = nullptr;
  for (const ReduceOp& r : kReduceOps)
    if (r.name == node.op_type && node.domain.empty()) op = &r;
  if (op == nullptr) return Decline(node.op_type, " is not a oneDNN reduction");
  const DType t = init.inputs[0].dtype;
  if (t != DType::kFloat32) return Decline("input is ", DTypeName(t), " (only float32 here)");
  STRATA_ASSIGN_OR_RETURN(Shape x, KnownShape(init.inputs[0], "data"));
  STRATA_ASSIGN_OR_RETURN(Shape y, KnownShape(init.outputs[0], "reduced"));
  if (x.NumElements() == 0 || x.rank() == 0 || x.rank() > DNNL_MAX_NDIMS) return Decline("empty or scalar input");
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ReadAxes(init));
  if (axes.empty()) {
    if (node.GetInt("noop_with_empty_axes", 0) != 0) return Decline("noop_with_empty_axes");
    for (int i = 0; i < x.rank(); ++i) axes.push_back(i);
  }
  Dims yd = ToDims(x);
  for (int64_t a : axes) {
    if (a < -x.rank() || a >= x.rank()) return Decline("axis ", a, " out of range");
    yd[a < 0 ? a + x.rank() : a] = 1;
  }
  int64_t per_output = 1;
  for (int i = 0; i < x.rank(); ++i) per_output *= yd[i] == 1 ? x[i] : 1;
  const bool sums = op->alg != Alg::reduction_max && op->alg != Alg::reduction_min && op->alg != Alg::reduction_mul;
  if (sums && per_output > kMaxSummed)
    return Decline("sums ", per_output, " elements per output (float32 accuracy: at most ", kMaxSummed, ")");
  return BuildKernel(init, node.op_type, [&](PrimitiveKernel& k) -> Status {
    // ReduceMax/Min propagate NaN in the reference; oneDNN drops it: inputs with NaN go to the reference kernel.
    if (op->alg == Alg::reduction_max || op->alg == Alg::reduction_min) STRATA_RETURN_IF_ERROR(k.FallBackOnNaN({0}));
    const Md src = PlainMd(x), dst = PlainMd(yd);
    if (dst.get_size() != static_cast<size_t>(y.NumElements()) * sizeof(float)) return Decline("unexpected output");
    dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(op->alg, src, dst, op->p, 0.0f), Attr(), CpuEngine());
    const int s = k.Input(0, src);
    k.Add(dnnl::reduction(pd), pd, {{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, k.Output(0, y, dst, &dst)}});
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
