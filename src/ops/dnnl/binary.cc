// oneDNN binary for broadcasting Add, Sub, Mul, Div and two-input Min, Max (float32). oneDNN broadcasts only its
// second source, so a broadcast first operand is swapped in for the commutative ops and declined for Sub/Div.
// Min/Max fall back on the reference kernel for inputs holding NaN (oneDNN returns the other operand, the reference
// propagates NaN).
#include <algorithm>

#include "ops/defs/fused/fused_util.h"
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
    {"Add", Alg::binary_add, true},  {"Sub", Alg::binary_sub, false}, {"Mul", Alg::binary_mul, true},
    {"Div", Alg::binary_div, false}, {"Min", Alg::binary_min, true},  {"Max", Alg::binary_max, true},
};

// `s` padded on the left with 1s to `rank` dims.
Dims Padded(const Shape& s, int rank) {
  Dims d(rank, 1);
  for (int i = 0; i < s.rank(); ++i) d[rank - s.rank() + i] = s[i];
  return d;
}

// oneDNN 2.6's jit binary broadcasts a second operand per channel ([1, C, 1, ...]) but sends one that varies only
// along other dims, such as stochastic depth's per-sample scale [N, 1, 1, 1], to its reference implementation
// (hundreds of ms on EfficientNetV2's early blocks at batch 32). When `s` equals `y` on one run of consecutive dims
// and is 1 on all others, both can be seen as 3-D, `y` as [A, C, B] and `s` as [1, C, 1]: the same bytes in the
// per-channel case. Returns false when `s` has no such run (a scalar, or two separate runs).
bool AsPerChannel(const Dims& y, const Dims& s, Dims* y3, Dims* s3) {
  const int rank = static_cast<int>(y.size());
  int first = -1, last = -1;
  for (int i = 0; i < rank; ++i)
    if (s[i] != 1) {
      if (first < 0) first = i;
      last = i;
    }
  if (first < 0) return false;
  for (int i = first; i <= last; ++i)
    if (s[i] != y[i]) return false;
  Dims d = {1, 1, 1};
  for (int i = 0; i < rank; ++i) d[i < first ? 0 : i <= last ? 1 : 2] *= y[i];
  *y3 = d;
  *s3 = {1, d[1], 1};
  return true;
}

const BinaryOp* FindBinary(std::string_view name) {
  for (const BinaryOp& b : kBinaryOps)
    if (b.name == name) return &b;
  return nullptr;
}

// strata.FusedElementwise: one binary primitive with the later steps as post-ops, or (when oneDNN has no
// implementation for those post-ops) the same steps as separate primitives working in place on the output.
// `types`: oneDNN's type of each input and of the output (float32, or bfloat16 activations: Plan::StoreBf16), which
// only the one-primitive form takes.
Status BuildFusedElementwise(PrimitiveKernel& k, const ElementwiseSteps& steps, const Shape& y,
                             const std::vector<dnnl::memory::data_type>& types) {
  const auto f32 = dnnl::memory::data_type::f32;
  const bool any_bf16 = std::any_of(types.begin(), types.end(), [&](auto t) { return t != f32; });
  const int rank = std::max(1, y.rank());
  const Dims yd = Padded(y, rank);
  const BinaryOp* first = FindBinary(steps.ops[0]);
  int a = 0, b = 1;
  if (Padded(k.input_shape(0), rank) != yd) {
    if (!first->commutative) return Decline("oneDNN cannot broadcast the first operand of ", first->name);
    std::swap(a, b);
  }
  if (Padded(k.input_shape(a), rank) != yd) return Decline("neither operand has the output's shape");
  const Md md_a = PlainMd(Padded(k.input_shape(a), rank), types[a]),
           md_b = PlainMd(Padded(k.input_shape(b), rank), types[b]);
  const Md dst = PlainMd(yd, types.back());
  // Post-op operands and eltwise specs, step by step.
  dnnl::post_ops po;
  std::vector<std::pair<int, int>> post_args;  // post-op index -> node input
  std::vector<EltwiseSpec> elt(steps.ops.size());
  bool drops_nan = false;
  int next = 2;
  for (size_t i = 1; i < steps.ops.size(); ++i) {
    if (steps.acts[i].op.empty()) {
      post_args.emplace_back(po.len(), next);
      po.append_binary(FindBinary(steps.ops[i])->alg, PlainMd(Padded(k.input_shape(next), rank), types[next]));
      ++next;
    } else {
      STRATA_ASSIGN_OR_RETURN(elt[i], EltwiseFor(steps.acts[i].op, steps.acts[i].alpha, steps.acts[i].beta));
      drops_nan |= elt[i].drops_nan;
      AppendEltwise(&po, elt[i]);
    }
  }
  if (drops_nan && any_bf16) return Decline("bfloat16 activations with an activation that drops NaN");
  if (drops_nan) {
    std::vector<int> all;
    for (int i = 0; i < steps.num_inputs; ++i) all.push_back(i);
    STRATA_RETURN_IF_ERROR(k.FallBackOnNaN(all, /*nonfinite=*/true));
  }
  dnnl::binary::primitive_desc pd;
  try {
    pd = dnnl::binary::primitive_desc(dnnl::binary::desc(first->alg, md_a, md_b, dst), Attr(po), CpuEngine());
    // oneDNN's jit binary takes only some broadcasts of post-op operands; its reference implementation is slower
    // than separate jit primitives.
    if (IsRefImpl(pd)) pd = dnnl::binary::primitive_desc();
  } catch (const dnnl::error&) {
    pd = dnnl::binary::primitive_desc();
  }
  const int sa = k.Input(a, md_a, &md_a), sb = k.Input(b, md_b, &md_b);
  const int out = k.Output(0, y, dst, &dst);
  if (pd) {  // one primitive
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC_0, sa}, {DNNL_ARG_SRC_1, sb}, {DNNL_ARG_DST, out}};
    for (const auto& [idx, input] : post_args) {
      const Md md = PlainMd(Padded(k.input_shape(input), rank), types[input]);
      args.emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1, k.Input(input, md, &md));
    }
    k.Add(dnnl::binary(pd), pd, std::move(args));
    // Its inputs and output may be bfloat16 activations, which the one primitive takes (oneDNN converts as it reads
    // and writes; the arithmetic is float32).
    k.set_bf16_variant((1u << std::min(steps.num_inputs, 31)) - 1, true);
    return Status::OK();
  }
  if (any_bf16) return Decline("bfloat16 activations need the one-primitive form");
  // Step by step, in place on the output.
  dnnl::binary::primitive_desc pd0(dnnl::binary::desc(first->alg, md_a, md_b, dst), Attr(), CpuEngine());
  k.Add(dnnl::binary(pd0), pd0, {{DNNL_ARG_SRC_0, sa}, {DNNL_ARG_SRC_1, sb}, {DNNL_ARG_DST, out}});
  next = 2;
  for (size_t i = 1; i < steps.ops.size(); ++i) {
    if (steps.acts[i].op.empty()) {
      const Md md = PlainMd(Padded(k.input_shape(next), rank));
      dnnl::binary::primitive_desc p(dnnl::binary::desc(FindBinary(steps.ops[i])->alg, dst, md, dst), Attr(),
                                     CpuEngine());
      const int c = k.Input(next++, md, &md);
      k.Add(dnnl::binary(p), p, {{DNNL_ARG_SRC_0, out}, {DNNL_ARG_SRC_1, c}, {DNNL_ARG_DST, out}});
      continue;
    }
    for (int part = 0; part < (elt[i].chained ? 2 : 1); ++part) {
      const Alg alg = part == 0 ? elt[i].alg : elt[i].alg2;
      const float alpha = part == 0 ? elt[i].alpha : elt[i].alpha2, beta = part == 0 ? elt[i].beta : elt[i].beta2;
      dnnl::eltwise_forward::primitive_desc p(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, alg, dst, alpha, beta), Attr(), CpuEngine());
      k.Add(dnnl::eltwise_forward(p), p, {{DNNL_ARG_SRC, out}, {DNNL_ARG_DST, out}});
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateFusedElementwise(const KernelInit& init) {
  auto steps = ReadElementwiseSteps(init.node);
  if (!steps.ok()) return Decline(steps.status().message());
  if (static_cast<int>(init.inputs.size()) != steps->num_inputs) return Decline("input count does not match the steps");
  // Every input and the output float32, or bfloat16 where the plan stores them so.
  std::vector<ValueType> ins(init.inputs.begin(), init.inputs.end()), outs(init.outputs.begin(), init.outputs.end());
  std::vector<dnnl::memory::data_type> types;
  for (std::vector<ValueType>* vts : {&ins, &outs})
    for (ValueType& vt : *vts) types.push_back(FloatType(TakeBf16AsFloat32(vt) ? DType::kBFloat16 : DType::kFloat32));
  if (outs.size() != 1) return Decline("needs one output");
  STRATA_RETURN_IF_ERROR(RequireFloat32(KernelInit{init.node, ins, outs}));
  STRATA_ASSIGN_OR_RETURN(Shape y, KnownShape(init.outputs[0], "output"));
  return BuildKernel(init, "FusedElementwise",
                     [&](PrimitiveKernel& k) { return BuildFusedElementwise(k, *steps, y, types); });
}

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
    Md md0 = PlainMd(d0), md1 = PlainMd(d1), dst = PlainMd(yd);
    dnnl::binary::primitive_desc pd(dnnl::binary::desc(op->alg, md0, md1, dst), Attr(), CpuEngine());
    Dims y3, s3;
    if (IsRefImpl(pd) && AsPerChannel(yd, d1, &y3, &s3)) {
      const Md md0_3 = PlainMd(y3), md1_3 = PlainMd(s3), dst_3 = PlainMd(y3);
      dnnl::binary::primitive_desc pd3(dnnl::binary::desc(op->alg, md0_3, md1_3, dst_3), Attr(), CpuEngine());
      if (!IsRefImpl(pd3)) {
        pd = pd3;
        md0 = md0_3;
        md1 = md1_3;
        dst = dst_3;
      }
    }
    const int s0 = k.Input(first, md0, &md0);
    const int s1 = k.Input(second, md1, &md1);
    k.Add(dnnl::binary(pd), pd,
          {{DNNL_ARG_SRC_0, s0}, {DNNL_ARG_SRC_1, s1}, {DNNL_ARG_DST, k.Output(0, y, dst, &dst)}});
    return Status::OK();
  });
}

}  // namespace strata::ops::onednn
