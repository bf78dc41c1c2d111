// Scan (opset 8, 9, 11, 16): runs `body` once per position of the scan inputs. The inputs are N state variables
// then M (num_scan_inputs) scan inputs; the body takes (N states, M slices) and returns (N states, K values); the
// node returns the N final states and K scan outputs, each the per-iteration values stacked along a new axis.
//   opset 9+: slices are taken along scan_input_axes (default 0; negative allowed from opset 11), in the order of
//             scan_input_directions (1 = reverse); outputs are stacked along scan_output_axes, in the order of
//             scan_output_directions.
//   opset 8:  an optional first input sequence_lens, and a leading batch axis on every input: each batch element
//             is scanned on its own along axis 1 (its first sequence_lens[b] positions, in the order of `directions`)
//             and scan outputs are [batch, sequence, ...], zero past a short sequence.
// Tensor values only.
#include <cstring>

#include "ops/defs/control/control_util.h"

namespace strata::ops {
namespace {

struct ScanSpec {
  int states = 0;        // N
  int scan_inputs = 0;   // M
  int scan_outputs = 0;  // K
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;  // raw attribute values (axes normalised later)
  int first_input = 0;   // 1 in opset 8 (sequence_lens), else 0
};

StatusOr<std::vector<int64_t>> ReadList(const Node& node, std::string_view name, int count, int64_t def, bool is_dir) {
  std::vector<int64_t> v = node.GetInts(name, std::vector<int64_t>(count, def));
  if (static_cast<int>(v.size()) != count)
    return InvalidArgumentError(node.Describe(), ": attribute '", name, "' must have ", count, " values, got ", v.size());
  if (is_dir)
    for (int64_t d : v)
      if (d != 0 && d != 1)
        return InvalidArgumentError(node.Describe(), ": attribute '", name, "' holds directions 0 or 1, got ", d);
  return v;
}

StatusOr<ScanSpec> ReadSpec(const Node& node, const graph::Graph& body, int num_inputs, int num_outputs) {
  ScanSpec sp;
  STRATA_ASSIGN_OR_RETURN(int64_t m, node.RequireInt("num_scan_inputs"));
  sp.first_input = node.opset < 9 ? 1 : 0;
  const int given = num_inputs - sp.first_input;
  if (m < 1 || m > given)
    return InvalidArgumentError(node.Describe(), ": num_scan_inputs must be in [1, ", given, "], got ", m);
  sp.scan_inputs = static_cast<int>(m);
  sp.states = given - sp.scan_inputs;
  sp.scan_outputs = num_outputs - sp.states;
  if (sp.scan_outputs < 0)
    return InvalidArgumentError(node.Describe(), ": ", sp.states, " state variables need at least as many outputs, got ",
                                num_outputs);
  STRATA_RETURN_IF_ERROR(control::CheckBodyArity(node, body, "body", sp.states + sp.scan_inputs, num_outputs));
  if (node.opset < 9) {
    STRATA_ASSIGN_OR_RETURN(sp.in_dirs, ReadList(node, "directions", sp.scan_inputs, 0, true));
    sp.in_axes.assign(sp.scan_inputs, 0);
    sp.out_axes.assign(sp.scan_outputs, 0);
    sp.out_dirs.assign(sp.scan_outputs, 0);
    return sp;
  }
  STRATA_ASSIGN_OR_RETURN(sp.in_axes, ReadList(node, "scan_input_axes", sp.scan_inputs, 0, false));
  STRATA_ASSIGN_OR_RETURN(sp.in_dirs, ReadList(node, "scan_input_directions", sp.scan_inputs, 0, true));
  STRATA_ASSIGN_OR_RETURN(sp.out_axes, ReadList(node, "scan_output_axes", sp.scan_outputs, 0, false));
  STRATA_ASSIGN_OR_RETURN(sp.out_dirs, ReadList(node, "scan_output_directions", sp.scan_outputs, 0, true));
  return sp;
}

Status ScanInfer(InferContext& ctx) {
  const Node& node = ctx.node();
  STRATA_ASSIGN_OR_RETURN(const graph::Graph* body, control::RequireBody(node, "body"));
  STRATA_ASSIGN_OR_RETURN(ScanSpec sp, ReadSpec(node, *body, ctx.num_inputs(), ctx.num_outputs()));
  const bool batched = node.opset < 9;
  const int lead = batched ? 1 : 0;  // axes in front of the scanned part (the batch axis of opset 8)
  Dim batch, seq;
  std::vector<ValueType> ins;
  for (int i = 0; i < sp.states; ++i) {
    ValueType t{ctx.input_dtype(sp.first_input + i), ctx.input_shape(sp.first_input + i), nullptr};
    if (batched && t.shape.rank_known) {
      if (t.shape.rank() < 1) return ctx.Error("state variable ", i, " needs a batch axis, got a scalar");
      batch = t.shape.dims[0];
      t.shape = control::RemoveAxis(t.shape, 0);
    }
    ins.push_back(std::move(t));
  }
  for (int j = 0; j < sp.scan_inputs; ++j) {
    const int idx = sp.first_input + sp.states + j;
    ValueType t{ctx.input_dtype(idx), ctx.input_shape(idx), nullptr};
    if (t.shape.rank_known) {
      const int r = t.shape.rank() - lead;
      STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(sp.in_axes[j], r, node, "scan_input_axes"));
      if (batched) t.shape = control::RemoveAxis(t.shape, 0);
      if (j == 0 || !seq.known()) seq = t.shape.dims[axis];
      t.shape = control::RemoveAxis(t.shape, axis);
    }
    ins.push_back(std::move(t));
  }
  std::vector<ValueType> outs;
  STRATA_RETURN_IF_ERROR(ctx.InferSubgraph(*body, ins, &outs));
  for (int i = 0; i < sp.states; ++i) {
    PartialShape s = control::MergeShapes(ins[i].shape, outs[i].shape);
    if (batched) s = control::InsertAxis(s, 0, batch);
    ctx.SetOutput(i, outs[i].dtype != DType::kUndefined ? outs[i].dtype : ins[i].dtype, s);
  }
  for (int k = 0; k < sp.scan_outputs; ++k) {
    const ValueType& o = outs[sp.states + k];
    PartialShape s = o.shape;
    if (s.rank_known) {
      STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(sp.out_axes[k], s.rank() + 1, node, "scan_output_axes"));
      s = control::InsertAxis(s, axis, seq);
      if (batched) s = control::InsertAxis(s, 0, batch);
    }
    ctx.SetOutput(sp.states + k, o.dtype, s);
  }
  return Status::OK();
}

// One scan over `seq_len` positions. `scan_in` are the scan inputs (their scan axes in `axes`); `states` go in as the
// initial and come out as the final states; `stacked` gets the K scan outputs.
Status ScanOnce(KernelContext& ctx, const graph::Graph& body, const ScanSpec& sp, const std::vector<Tensor>& scan_in,
                const std::vector<int>& in_axes, int64_t seq_len, std::vector<Tensor>* states,
                std::vector<Tensor>* stacked) {
  const Node& node = ctx.node();
  std::vector<std::pair<std::string, Tensor>> feeds(sp.states + sp.scan_inputs);
  for (size_t i = 0; i < feeds.size(); ++i) feeds[i].first = body.inputs[i].name;
  stacked->assign(sp.scan_outputs, Tensor());
  std::vector<int> out_axes(sp.scan_outputs);
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < seq_len; ++t) {
    for (int i = 0; i < sp.states; ++i) feeds[i].second = std::move((*states)[i]);
    for (int j = 0; j < sp.scan_inputs; ++j) {
      const Tensor& x = scan_in[j];
      const int64_t pos = sp.in_dirs[j] ? seq_len - 1 - t : t;
      STRATA_ASSIGN_OR_RETURN(Tensor slice,
                              Tensor::Create(x.dtype(), control::RemoveAxis(x.shape(), in_axes[j]), ctx.allocator()));
      control::CopySliceOut(x, in_axes[j], pos, &slice);
      feeds[sp.states + j].second = std::move(slice);
    }
    Status s = ctx.RunSubgraph(body, feeds, &outs);
    if (!s.ok()) return s.WithContext(StrCat(node.Describe(), " iteration ", t));
    if (static_cast<int>(outs.size()) != sp.states + sp.scan_outputs)
      return ctx.Error("the body produced ", outs.size(), " outputs, expected ", sp.states + sp.scan_outputs);
    for (int i = 0; i < sp.states; ++i) {
      if (outs[i].dtype() != feeds[i].second.dtype())
        return ctx.Error("iteration ", t, ": state variable ", i, " entered as ", feeds[i].second.TypeString(),
                         " and came back as ", outs[i].TypeString());
      (*states)[i] = std::move(outs[i]);
    }
    for (int k = 0; k < sp.scan_outputs; ++k) {
      const Tensor& v = outs[sp.states + k];
      Tensor& y = (*stacked)[k];
      if (t == 0) {
        STRATA_ASSIGN_OR_RETURN(out_axes[k], NormalizeAxis(sp.out_axes[k], v.rank() + 1, node, "scan_output_axes"));
        STRATA_ASSIGN_OR_RETURN(y, Tensor::Create(v.dtype(), control::InsertAxis(v.shape(), out_axes[k], seq_len),
                                                  ctx.allocator()));
      } else if (v.dtype() != y.dtype() || control::InsertAxis(v.shape(), out_axes[k], seq_len) != y.shape()) {
        return ctx.Error("iteration ", t, ": scan output ", k, " is ", v.TypeString(), ", which does not fit ",
                         y.TypeString(), " as the first iteration's values did");
      }
      control::CopySliceIn(v, out_axes[k], sp.out_dirs[k] ? seq_len - 1 - t : t, &y);
    }
  }
  if (seq_len == 0) {
    for (int k = 0; k < sp.scan_outputs; ++k) {
      const graph::ValueInfo& decl = body.outputs[sp.states + k];
      if (decl.dtype == DType::kUndefined)
        return UnimplementedError(node.Describe(), ": the sequence is empty and the body does not declare the ",
                                  "element type of scan output '", decl.name, "'");
      const int axis = static_cast<int>(sp.out_axes[k] < 0 ? sp.out_axes[k] + decl.shape.rank() + 1 : sp.out_axes[k]);
      (*stacked)[k] = Tensor::Empty(decl.dtype, control::EmptyStackShape(decl.shape, axis));  // no elements
    }
  }
  return Status::OK();
}

// Reads the scan inputs' sequence length along their scan axes (after `lead` leading axes); all must agree.
StatusOr<int64_t> SequenceLength(KernelContext& ctx, const ScanSpec& sp, int lead, std::vector<int>* axes) {
  int64_t seq = -1;
  axes->resize(sp.scan_inputs);
  for (int j = 0; j < sp.scan_inputs; ++j) {
    const Tensor& x = ctx.input(sp.first_input + sp.states + j);
    if (x.rank() < 1 + lead)
      return ctx.Error("scan input ", j, " must have rank >= ", 1 + lead, ", got ", x.shape().ToString());
    STRATA_ASSIGN_OR_RETURN(int axis, NormalizeAxis(sp.in_axes[j], x.rank() - lead, ctx.node(), "scan_input_axes"));
    (*axes)[j] = axis;
    const int64_t len = x.dim(axis + lead);
    if (seq >= 0 && len != seq)
      return ctx.Error("scan inputs have different sequence lengths: ", seq, " and ", len, " (scan input ", j, ")");
    seq = len;
  }
  return seq;
}

Status Scan9(KernelContext& ctx, const graph::Graph& body, const ScanSpec& sp) {
  std::vector<int> axes;
  STRATA_ASSIGN_OR_RETURN(int64_t seq, SequenceLength(ctx, sp, 0, &axes));
  std::vector<Tensor> states(sp.states), scan_in(sp.scan_inputs), stacked;
  for (int i = 0; i < sp.states; ++i) states[i] = ctx.input(i);
  for (int j = 0; j < sp.scan_inputs; ++j) scan_in[j] = ctx.input(sp.states + j);
  STRATA_RETURN_IF_ERROR(ScanOnce(ctx, body, sp, scan_in, axes, seq, &states, &stacked));
  scan_in.clear();
  for (int i = 0; i < sp.states; ++i) STRATA_RETURN_IF_ERROR(control::EmitOutput(ctx, i, states[i]));
  for (int k = 0; k < sp.scan_outputs; ++k) STRATA_RETURN_IF_ERROR(control::EmitOutput(ctx, sp.states + k, stacked[k]));
  return Status::OK();
}

// Stacks per-batch results into output `out`: item b of `parts` goes to [b, 0:len) of an output whose axis 1 has
// `max_len` positions (`max_len` < 0: the parts are whole items, no sequence axis); the rest is zero.
Status StackBatch(KernelContext& ctx, int out, const std::vector<Tensor>& parts, int64_t max_len) {
  if (!ctx.output_wanted(out)) return Status::OK();
  const Tensor* first = nullptr;
  for (const Tensor& p : parts)
    if (first == nullptr || (p.num_elements() > 0 && first->num_elements() == 0)) first = &p;
  Shape item = first->shape();
  if (max_len >= 0) item[0] = max_len;
  for (const Tensor& p : parts) {
    if (max_len >= 0 && p.num_elements() == 0 && p.dtype() == first->dtype()) continue;  // an empty sequence
    Shape ps = p.shape();
    if (max_len >= 0 && ps.rank() == item.rank()) ps[0] = max_len;
    if (p.dtype() != first->dtype() || ps != item)
      return ctx.Error("output ", out, " differs between batch elements: ", p.TypeString(), " vs ",
                       first->TypeString());
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(out, first->dtype(), control::InsertAxis(item, 0,
                                                                                        static_cast<int64_t>(parts.size()))));
  const int64_t per_item = item.NumElements();
  const bool is_string = y->dtype() == DType::kString;
  const size_t es = DTypeSize(y->dtype());
  for (size_t b = 0; b < parts.size(); ++b) {
    const int64_t n = parts[b].num_elements();
    if (is_string) {
      std::string* d = y->data<std::string>() + b * per_item;
      std::copy(parts[b].data<std::string>(), parts[b].data<std::string>() + n, d);
      std::fill(d + n, d + per_item, std::string());
    } else {
      char* d = static_cast<char*>(y->raw_data()) + b * per_item * es;
      if (n > 0) std::memcpy(d, parts[b].raw_data(), n * es);
      std::memset(d + n * es, 0, (per_item - n) * es);
    }
  }
  return Status::OK();
}

Status Scan8(KernelContext& ctx, const graph::Graph& body, const ScanSpec& sp) {
  std::vector<int> axes;
  STRATA_ASSIGN_OR_RETURN(int64_t max_len, SequenceLength(ctx, sp, 1, &axes));
  const int first = sp.first_input;
  const int64_t batch = ctx.input(first).rank() > 0 ? ctx.input(first).dim(0) : -1;
  for (int i = 0; i < sp.states + sp.scan_inputs; ++i) {
    const Tensor& x = ctx.input(first + i);
    if (x.rank() < 1 || x.dim(0) != batch)
      return ctx.Error("every input needs the batch axis 0 of length ", batch, ", input ", first + i, " is ",
                       x.shape().ToString());
  }
  std::vector<int64_t> lens(batch, max_len);
  if (ctx.has_input(0)) {
    STRATA_ASSIGN_OR_RETURN(lens, ReadInts(ctx.input(0), "sequence_lens"));
    if (static_cast<int64_t>(lens.size()) != batch)
      return ctx.Error("sequence_lens must have one value per batch element (", batch, "), got ", lens.size());
    for (int64_t l : lens)
      if (l < 0 || l > max_len) return ctx.Error("sequence_lens values must be in [0, ", max_len, "], got ", l);
  }
  std::vector<std::vector<Tensor>> final_states(sp.states), outputs(sp.scan_outputs);
  std::vector<Tensor> states(sp.states), scan_in(sp.scan_inputs), stacked;
  for (int64_t b = 0; b < batch; ++b) {
    auto item = [&](int idx) -> StatusOr<Tensor> {
      const Tensor& x = ctx.input(idx);
      STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(x.dtype(), control::RemoveAxis(x.shape(), 0), ctx.allocator()));
      control::CopySliceOut(x, 0, b, &t);
      return t;
    };
    for (int i = 0; i < sp.states; ++i) {
      STRATA_ASSIGN_OR_RETURN(states[i], item(first + i));
    }
    for (int j = 0; j < sp.scan_inputs; ++j) {
      STRATA_ASSIGN_OR_RETURN(scan_in[j], item(first + sp.states + j));
    }
    STRATA_RETURN_IF_ERROR(ScanOnce(ctx, body, sp, scan_in, axes, lens[b], &states, &stacked));
    for (int i = 0; i < sp.states; ++i) final_states[i].push_back(std::move(states[i]));
    for (int k = 0; k < sp.scan_outputs; ++k) outputs[k].push_back(std::move(stacked[k]));
  }
  if (batch == 0) return ctx.Error("a batch of zero elements gives outputs of unknown shape");
  for (int i = 0; i < sp.states; ++i) STRATA_RETURN_IF_ERROR(StackBatch(ctx, i, final_states[i], -1));
  for (int k = 0; k < sp.scan_outputs; ++k) STRATA_RETURN_IF_ERROR(StackBatch(ctx, sp.states + k, outputs[k], max_len));
  return Status::OK();
}

Status ScanCompute(KernelContext& ctx) {
  const Node& node = ctx.node();
  STRATA_ASSIGN_OR_RETURN(const graph::Graph* body, control::RequireBody(node, "body"));
  STRATA_ASSIGN_OR_RETURN(ScanSpec sp, ReadSpec(node, *body, ctx.num_inputs(), ctx.num_outputs()));
  for (int i = sp.first_input; i < ctx.num_inputs(); ++i)
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing (only sequence_lens is optional)");
  return node.opset < 9 ? Scan8(ctx, *body, sp) : Scan9(ctx, *body, sp);
}

}  // namespace

void RegisterScan(OpRegistry* r) {
  OpSchema s;
  s.name = "Scan";
  s.since_version = 8;
  s.min_inputs = 0;  // opset 8 starts with the optional sequence_lens; num_scan_inputs >= 1 is checked
  s.max_inputs = -1;
  s.min_outputs = 1;
  s.max_outputs = -1;
  s.infer = ScanInfer;
  s.reference = ScanCompute;
  s.no_grad_reason = "control flow: gradients through subgraphs are not implemented";
  r->Add(std::move(s));
}

}  // namespace strata::ops
