// Einsum (opset 12): Einstein summation over any number of operands, with implicit ("ij,jk") and explicit
// ("ij,jk->ik") outputs, "..." (broadcast like numpy), repeated labels within one operand (diagonals: "ii->i"),
// and size-1 dimensions broadcasting against the same label elsewhere.
//
// The kernel never loops over all labels at once. Each operand is first made label-unique (a diagonal is a strided
// view) and loses the labels nobody else needs (summed with the reduce family's loop); operands are then contracted
// left to right, each step a batched matrix product [batch, m, k] x [batch, k, n] after one strided copy per side;
// the last result is summed and permuted into the output. Integers compute in uint64 (wrapping, like numpy's
// fixed-width arithmetic), the 16-bit floats in float.
#include <algorithm>
#include <map>
#include <set>

#include "ops/defs/math/einsum_equation.h"
#include "ops/defs/reduce/reduce_util.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

bool Has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// ---- inference ----

Status EinsumInfer(InferContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckSameDtype(ctx));
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !IsFloatingPoint(t) && !IsInteger(t))
    return ctx.Error("inputs must be number tensors, got ", DTypeName(t));
  STRATA_ASSIGN_OR_RETURN(std::string equation, ctx.node().RequireString("equation"));
  STRATA_ASSIGN_OR_RETURN(EinsumEquation eq, ParseEinsum(ctx.node(), equation, ctx.num_inputs()));
  std::vector<int> ranks;
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    const PartialShape& s = ctx.input_shape(k);
    if (s.rank_known) {
      ranks.push_back(s.rank());
    } else if (eq.inputs[k].ellipsis_at < 0) {
      ranks.push_back(static_cast<int>(eq.inputs[k].letters.size()));
    } else {
      // "..." of unknown length: only an explicit output without "..." has a known rank.
      PartialShape out;
      if (eq.explicit_output && eq.output.ellipsis_at < 0)
        out = PartialShape::Of(std::vector<Dim>(eq.output.letters.size()));
      ctx.SetOutput(0, t, out);
      return Status::OK();
    }
  }
  STRATA_ASSIGN_OR_RETURN(EinsumLabels labels, ResolveEinsumLabels(ctx.node(), eq, ranks));
  std::vector<Dim> size(kEllipsisLabel + 64);
  std::vector<bool> all_known(size.size(), true);
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    const PartialShape& s = ctx.input_shape(k);
    for (size_t a = 0; a < labels.inputs[k].size(); ++a) {
      const int l = labels.inputs[k][a];
      if (l >= static_cast<int>(size.size())) return ctx.Error("too many dimensions under '...'");
      const Dim d = s.rank_known ? s.dims[a] : Dim();
      if (!d.known()) {
        all_known[l] = false;
        if (!size[l].known() && size[l].symbol.empty()) size[l] = d;
      } else if (d.value != 1) {
        if (size[l].known() && size[l].value != 1 && size[l].value != d.value)
          return ctx.Error("label '", EinsumLabelChar(l), "' has size ", size[l].value, " and ", d.value,
                           " in the inputs (equation '", equation, "')");
        size[l] = d;
      } else if (!size[l].known() && size[l].symbol.empty() && all_known[l]) {
        size[l] = d;
      }
    }
  }
  std::vector<Dim> out;
  for (int l : labels.output) {
    // A label seen only as 1 and as unknown could be either.
    const bool one_or_unknown = size[l].known() && size[l].value == 1 && !all_known[l];
    out.push_back(one_or_unknown ? Dim() : size[l]);
  }
  ctx.SetOutput(0, t, PartialShape::Of(std::move(out)));
  return Status::OK();
}

// ---- kernel ----

template <typename T>
using EinsumC = std::conditional_t<std::is_integral_v<T>, uint64_t, ComputeType<T>>;

// A label-unique operand in compute type C. Intermediates are tensors from the kernel's allocator, so the memory limit
// applies to them and a huge outer product fails with RESOURCE_EXHAUSTED instead of aborting.
template <typename C>
struct Operand {
  Tensor data;
  std::vector<int> labels;
  std::vector<int64_t> dims;
  C* p() { return data.data<C>(); }
  const C* p() const { return data.data<C>(); }
};

template <typename C>
StatusOr<Tensor> Scratch(KernelContext& ctx, const std::vector<int64_t>& dims) {
  constexpr int64_t kMax = int64_t{1} << 40;  // elements; also keeps the byte count far from overflow
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d != 0 && n > kMax / d)
      return ResourceExhaustedError(ctx.node().Describe(), ": an intermediate of shape ", dims, " is too large");
    n *= d;
  }
  auto t = Tensor::Create(DTypeOf<C>(), Shape(dims), ctx.allocator());
  if (!t.ok()) return Status(t.status()).WithContext(ctx.node().Describe());
  return std::move(t).value();
}

// dst[i] = conv(src[offset of i]) for the row-major walk over dims with the given source strides.
template <typename S, typename C, typename Conv>
void GatherStrided(const S* src, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, C* dst,
                   Conv conv) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  StridedCounter at(dims, strides);
  for (int64_t i = 0; i < n; ++i, at.Next()) dst[i] = conv(src[at.offset()]);
}

// An input as a label-unique operand: repeated labels become the diagonal (their strides added).
template <typename T, typename C>
StatusOr<Operand<C>> LoadOperand(KernelContext& ctx, const Tensor& x, const std::vector<int>& labels) {
  Operand<C> op;
  std::vector<int64_t> strides;
  const std::vector<int64_t> own = Strides(x.shape());
  for (size_t a = 0; a < labels.size(); ++a) {
    const int64_t d = x.dim(static_cast<int>(a));
    auto it = std::find(op.labels.begin(), op.labels.end(), labels[a]);
    if (it == op.labels.end()) {
      op.labels.push_back(labels[a]);
      op.dims.push_back(d);
      strides.push_back(own[a]);
      continue;
    }
    const size_t u = it - op.labels.begin();
    if (op.dims[u] != d)
      return ctx.Error("label '", EinsumLabelChar(labels[a]), "' repeats within one input with sizes ", op.dims[u],
                       " and ", d);
    strides[u] += own[a];
  }
  STRATA_ASSIGN_OR_RETURN(op.data, Scratch<C>(ctx, op.dims));
  GatherStrided(x.data<T>(), op.dims, strides, op.p(), [](T v) { return static_cast<C>(ToCompute(v)); });
  return op;
}

template <typename C>
struct SumC {
  using Acc = C;
  using Out = C;
  C Init() const { return C(0); }
  C Map(C v, int64_t) const { return v; }
  C Combine(C a, C b) const { return a + b; }
  C Finalize(C a, int64_t, int64_t) const { return a; }
};

// Sums away every label for which keep(label) is false.
template <typename C, typename Keep>
Status SumOut(KernelContext& ctx, Operand<C>* op, Keep keep) {
  std::vector<bool> reduced(op->labels.size());
  bool any = false;
  for (size_t a = 0; a < reduced.size(); ++a) any |= (reduced[a] = !keep(op->labels[a]));
  if (!any) return Status::OK();
  Operand<C> r;
  for (size_t a = 0; a < reduced.size(); ++a) {
    if (reduced[a]) continue;
    r.labels.push_back(op->labels[a]);
    r.dims.push_back(op->dims[a]);
  }
  STRATA_ASSIGN_OR_RETURN(r.data, Scratch<C>(ctx, r.dims));
  ReduceWalk(MakeReducePlan(Shape(op->dims), reduced), op->p(), r.p(), SumC<C>{});
  *op = std::move(r);
  return Status::OK();
}

// The operand's data laid out as `labels` with sizes `dims` (a size-1 dimension broadcasts to a larger one).
template <typename C>
StatusOr<Tensor> Arrange(KernelContext& ctx, const Operand<C>& op, const std::vector<int>& labels,
                         const std::vector<int64_t>& dims) {
  const std::vector<int64_t> own = Strides(Shape(op.dims));
  std::vector<int64_t> strides;
  for (size_t i = 0; i < labels.size(); ++i) {
    const size_t a = std::find(op.labels.begin(), op.labels.end(), labels[i]) - op.labels.begin();
    strides.push_back(op.dims[a] == dims[i] ? own[a] : 0);
  }
  STRATA_ASSIGN_OR_RETURN(Tensor out, Scratch<C>(ctx, dims));
  GatherStrided(op.p(), dims, strides, out.data<C>(), [](C v) { return v; });
  return out;
}

template <typename V>
V Cat(V x, const V& y, const V& z) {
  x.insert(x.end(), y.begin(), y.end());
  x.insert(x.end(), z.begin(), z.end());
  return x;
}

// A x B over their shared labels as one batched matrix product; labels in `needed` (later operands, the output)
// survive as batch dimensions, the other shared ones are contracted.
template <typename C>
StatusOr<Operand<C>> Contract(KernelContext& ctx, Operand<C> a, Operand<C> b, const std::vector<int>& needed) {
  STRATA_RETURN_IF_ERROR(SumOut(ctx, &a, [&](int l) { return Has(b.labels, l) || Has(needed, l); }));
  STRATA_RETURN_IF_ERROR(SumOut(ctx, &b, [&](int l) { return Has(a.labels, l) || Has(needed, l); }));
  std::vector<int> batch, a_only, contracted, b_only;
  std::vector<int64_t> batch_d, a_d, k_d, b_d;
  for (size_t i = 0; i < a.labels.size(); ++i) {
    const int l = a.labels[i];
    auto j = std::find(b.labels.begin(), b.labels.end(), l);
    if (j == b.labels.end()) {
      a_only.push_back(l);
      a_d.push_back(a.dims[i]);
      continue;
    }
    const int64_t d = std::max(a.dims[i], b.dims[j - b.labels.begin()]);
    (Has(needed, l) ? batch : contracted).push_back(l);
    (Has(needed, l) ? batch_d : k_d).push_back(d);
  }
  for (size_t i = 0; i < b.labels.size(); ++i) {
    if (Has(a.labels, b.labels[i])) continue;
    b_only.push_back(b.labels[i]);
    b_d.push_back(b.dims[i]);
  }
  STRATA_ASSIGN_OR_RETURN(Tensor ta, Arrange(ctx, a, Cat(batch, a_only, contracted), Cat(batch_d, a_d, k_d)));
  STRATA_ASSIGN_OR_RETURN(Tensor tb, Arrange(ctx, b, Cat(batch, contracted, b_only), Cat(batch_d, k_d, b_d)));
  Operand<C> r;
  r.labels = Cat(batch, a_only, b_only);
  r.dims = Cat(batch_d, a_d, b_d);
  STRATA_ASSIGN_OR_RETURN(r.data, Scratch<C>(ctx, r.dims));
  const int64_t nb = Shape(batch_d).NumElements(), m = Shape(a_d).NumElements();
  const int64_t k = Shape(k_d).NumElements(), n = Shape(b_d).NumElements();
  const C* pa = ta.data<C>();
  const C* pb = tb.data<C>();
  C* pr = r.p();
  std::fill(pr, pr + nb * m * n, C(0));
  for (int64_t t = 0; t < nb; ++t) {
    for (int64_t i = 0; i < m; ++i) {
      C* row = pr + (t * m + i) * n;
      for (int64_t p = 0; p < k; ++p) {
        const C av = pa[(t * m + i) * k + p];
        const C* brow = pb + (t * k + p) * n;
        for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
      }
    }
  }
  return r;
}

template <typename T>
Status EinsumTyped(KernelContext& ctx, const EinsumLabels& labels, const std::vector<int64_t>& size) {
  using C = EinsumC<T>;
  const int n = ctx.num_inputs();
  STRATA_ASSIGN_OR_RETURN(Operand<C> acc, (LoadOperand<T, C>(ctx, ctx.input(0), labels.inputs[0])));
  for (int k = 1; k < n; ++k) {
    std::vector<int> needed = labels.output;
    for (int j = k + 1; j < n; ++j) needed.insert(needed.end(), labels.inputs[j].begin(), labels.inputs[j].end());
    STRATA_ASSIGN_OR_RETURN(Operand<C> next, (LoadOperand<T, C>(ctx, ctx.input(k), labels.inputs[k])));
    STRATA_ASSIGN_OR_RETURN(acc, Contract(ctx, std::move(acc), std::move(next), needed));
  }
  STRATA_RETURN_IF_ERROR(SumOut(ctx, &acc, [&](int l) { return Has(labels.output, l); }));
  std::vector<int64_t> out_dims;
  for (int l : labels.output) out_dims.push_back(size[l]);
  STRATA_ASSIGN_OR_RETURN(Tensor out, Arrange(ctx, acc, labels.output, out_dims));
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, ctx.input(0).dtype(), Shape(out_dims)));
  const C* po = out.data<C>();
  T* py = y->data<T>();
  for (int64_t i = 0; i < y->num_elements(); ++i) py[i] = static_cast<T>(static_cast<ComputeType<T>>(po[i]));
  return Status::OK();
}

Status EinsumCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  STRATA_ASSIGN_OR_RETURN(std::string equation, node.RequireString("equation"));
  STRATA_ASSIGN_OR_RETURN(EinsumEquation eq, ParseEinsum(node, equation, ctx.num_inputs()));
  std::vector<int> ranks;
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    if (ctx.input(k).dtype() != ctx.input(0).dtype())
      return ctx.Error("all inputs must have the same element type; input 0 is ", DTypeName(ctx.input(0).dtype()),
                       ", input ", k, " is ", DTypeName(ctx.input(k).dtype()));
    ranks.push_back(ctx.input(k).rank());
  }
  STRATA_ASSIGN_OR_RETURN(EinsumLabels labels, ResolveEinsumLabels(node, eq, ranks));
  // Each label's size: equal wherever it appears, or 1 (broadcast).
  std::vector<int64_t> size(kEllipsisLabel + 64, -1);
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    for (size_t a = 0; a < labels.inputs[k].size(); ++a) {
      const int l = labels.inputs[k][a];
      if (l >= static_cast<int>(size.size())) return ctx.Error("too many dimensions under '...'");
      const int64_t d = ctx.input(k).dim(static_cast<int>(a));
      if (size[l] < 0 || size[l] == 1) {
        size[l] = d;
      } else if (d != 1 && d != size[l]) {
        return ctx.Error("label '", EinsumLabelChar(l), "' has size ", size[l], " and ", d, " (input ", k,
                         ") in equation '", equation, "'");
      }
    }
  }
  return DispatchNumeric(ctx.input(0).dtype(),
                         [&](auto tag) { return EinsumTyped<typename decltype(tag)::type>(ctx, labels, size); });
}

// Operand i's gradient is another Einsum: dY contracted with every other operand onto operand i's labels. Labels only
// operand i has (summed away in the forward) come back by broadcasting; labels of size 1 that broadcast against a
// larger size elsewhere are summed back to 1. Ellipsis dimensions get letters of their own. Repeated labels within
// the differentiated operand (diagonals) are not supported; operand ranks must be known.
Status EinsumGrad(GradContext& ctx) {
  const Node& node = ctx.node();
  const int n = static_cast<int>(node.inputs.size());
  STRATA_ASSIGN_OR_RETURN(std::string equation, node.RequireString("equation"));
  STRATA_ASSIGN_OR_RETURN(EinsumEquation eq, ParseEinsum(node, equation, n));
  std::vector<int> ranks;
  for (int i = 0; i < n; ++i) {
    if (!ctx.input_type(i).shape.rank_known)
      return UnimplementedError(node.Describe(), ": the gradient of Einsum needs the operands' ranks");
    ranks.push_back(ctx.input_type(i).shape.rank());
  }
  STRATA_ASSIGN_OR_RETURN(EinsumLabels labels, ResolveEinsumLabels(node, eq, ranks));
  // Letters: a label below kEllipsisLabel keeps its own; ellipsis dimensions take letters nobody uses.
  std::map<int, char> letter;
  std::vector<bool> used(kEllipsisLabel, false);
  auto all = labels.inputs;
  all.push_back(labels.output);
  for (const auto& term : all)
    for (int l : term)
      if (l < kEllipsisLabel) used[l] = true, letter[l] = EinsumLabelChar(l);
  int next = 0;
  for (const auto& term : all)
    for (int l : term) {
      if (letter.count(l)) continue;
      while (next < kEllipsisLabel && used[next]) ++next;
      if (next == kEllipsisLabel) return UnimplementedError(node.Describe(), ": too many labels for the gradient");
      used[next] = true;
      letter[l] = EinsumLabelChar(next);
    }
  const auto spell = [&](const std::vector<int>& term) {
    std::string t;
    for (int l : term) t += letter[l];
    return t;
  };
  for (int i = 0; i < n; ++i) {
    if (!ctx.needs_input_grad(i)) continue;
    const std::vector<int>& li = labels.inputs[i];
    for (size_t a = 0; a < li.size(); ++a)
      for (size_t b = a + 1; b < li.size(); ++b)
        if (li[a] == li[b])
          return UnimplementedError(node.Describe(), ": the gradient of an Einsum operand with a repeated label (",
                                    letter[li[a]], ") is not supported");
    std::set<int> others(labels.output.begin(), labels.output.end());
    std::string sub = spell(labels.output);
    std::vector<std::string> ins{ctx.output_grad(0)};
    for (int j = 0; j < n; ++j) {
      if (j == i) continue;
      others.insert(labels.inputs[j].begin(), labels.inputs[j].end());
      sub += "," + spell(labels.inputs[j]);
      ins.push_back(In(ctx, j));
    }
    std::vector<int> keep;
    std::vector<int64_t> missing;
    for (size_t a = 0; a < li.size(); ++a) {
      if (others.count(li[a])) {
        keep.push_back(li[a]);
      } else {
        missing.push_back(static_cast<int64_t>(a));
      }
    }
    AttributeMap attrs;
    attrs["equation"] = Attribute::String(sub + "->" + spell(keep));
    std::string g = Emit1(ctx, "Einsum", ins, std::move(attrs));
    const std::string shape = Emit1(ctx, "Shape", {In(ctx, i)});
    if (!missing.empty()) g = Emit1(ctx, "Expand", {Emit1(ctx, "Unsqueeze", {g, ConstInts(ctx, missing)}), shape});
    ctx.SetInputGrad(i, Emit1(ctx, "ReduceSumTo", {g, shape}, {}, graph::kStrataDomain));
  }
  return Status::OK();
}

}  // namespace

void RegisterEinsum(OpRegistry* r) {
  OpSchema s;
  s.name = "Einsum";
  s.since_version = 12;
  s.min_inputs = 1;
  s.max_inputs = -1;
  s.infer = EinsumInfer;
  s.reference = EinsumCompute;
  s.grad = EinsumGrad;
  r->Add(std::move(s));
}

}  // namespace strata::ops
