// oneDNN binary for broadcasting Add, Sub, Mul, Div and two-input Min, Max (float32). oneDNN broadcasts only its
// second source, so a broadcast first operand is swapped in for the commutative ops and declined for Sub/Div.
// Min/Max fall back on the reference kernel for inputs holding NaN (oneDNN returns the other operand, the reference
// propagates NaN).
#include "ops/dnnl/dnnl_common.h"
#include "ops/dnnl/dnnl_kernels.h"

namespace strata::ops::onednn {
namespace {

struct BinaryOp {
  std::string_view name;
  Alg alg;
  bool commutative;
};
constexpr BinaryOp kBinaryOps[] = {
    {"Add", Alg::binary_add, true}, {"Sub", Alg::binary_sub, false}, {"Mul", Alg::binary_mul, true},
    {"Div", Alg::binary_div, false}, {"Min", Alg::binary_min, true}, {"Max", Alg::binary_max, true},
};

// `s` padded on the left with 1s to `rank` dims.
Dims Padded(const Shape& s, int rank) {
  Dims d(rank, 1);
  for (int i = 0; i < s.rank(); ++i) d[rank - s.rank() + i] = s[i];
  return d;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateBinary(const KernelInit& init) {
  const Node& node = init.node;
  if (!node.domain.empty()) return Decline("not an ONNX op");
  const BinaryOp* op = nullptr;
  for (const BinaryOp& b : kBinaryOps)
    if (b.name == node.op_type) op = &b;
  if (op == nullptr) return Decline(node.op_type, " is not a oneDNN binary op");
  if (node.inputs.size() != 2 || !node.has_input(0) || !node.has_input(1)) return Decline("needs exactly two inputs");
  if (node.opset < 7) return Decline("opset ", node.opset, " legacy broadcast semantics");
  STRATA_RETURN_IF_ERROR(RequireFloat32(init));
  STRATA_ASSIGN_OR_RETURN(Shape y, KnownShape(init.outputs[0], "output"));
  return BuildKernel(init, node.op_type, [&](PrimitiveKernel& k) -> Status {
    const int rank = std::max(1, y.rank());
    const Dims yd = Padded(y, rank);
    int first = 0, second = 1;
    if (Padded(k.input_shape(0), rank) != yd) {
      if (!op->commutative) return Decline("oneDNN cannot broadcast the first operand of ", op->name);
      std::swap(first, second);
    }
    const Dims d0 = Padded(k.input_shape(first), rank), d1 = Padded(k.input_shape(second), rank);
    if (d0 != yd) return Decline("neither operand has the output's shape");
    if (op->alg == Alg::binary_min || op->alg == Alg::binary_max) STRATA_RETURN_IF_ERROR(k.FallBackOnNaN({0, 1}));
    const Md md0 = PlainMd(d0), md1 = PlainMd(d1), dst = PlainMd(yd);
    dnnl::binary::primitive_desc pd(dnnl::binary::desc(op->alg, md0, md1, dst), Attr(), CpuEngine());
    const int s0 = k.Input(first, md0, &md0);
    const int s1 = k.Input(second, md1, &md1);
    k.Add(dnnl::binary(pd), pd, {{DNNL_ARG_SRC_0, s0}, {DNNL_ARG_SRC_1, s1}, {DNNL_ARG_DST, k.Output(0, y, dst, &dst)}});
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
