#include "graph/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include "core/logging.h"
#include "graph/interpreter.h"
#include "graph/run_hooks.h"
#include "ops/bf16_output.h"
#include "ops/inplace.h"

namespace strata::graph {

constexpr int64_t kArenaAlignment = 64;

struct ExecState {
  void* arena = nullptr;
  size_t arena_bytes = 0;
  Allocator* alloc = nullptr;
  std::vector<Tensor> values;   // the current tensor of each value id
  std::vector<Tensor> planned;  // arena views, prepared once (undefined when not planned)
  std::vector<uint8_t> fresh;   // 1 when values[id] is memory the caller may own (allocated for this run)
  std::vector<const Tensor*> ins;
  ~ExecState() {
    if (arena != nullptr) alloc->Free(arena, arena_bytes);
  }
};

namespace {

class PlanKernelContext final : public ops::KernelContext {
 public:
  PlanKernelContext(const Plan& plan, const PlanStep& step, ExecState& state, Allocator* alloc)
      : plan_(plan), step_(step), state_(state), alloc_(alloc) {
    node_ = step.node;
    inputs_ = state.ins.data();
    num_inputs_ = static_cast<int>(step.inputs.size());
    num_outputs_ = static_cast<int>(step.outputs.size());
  }

  StatusOr<Tensor*> Output(int i, DType dtype, const Shape& shape) override {
    STRATA_CHECK(i >= 0 && i < num_outputs_, node_->Describe(), ": output index ", i, " out of range");
    const int id = step_.outputs[i];
    if (id < 0) {  // an output the graph does not use: give the kernel scratch memory
      auto t = Tensor::Create(dtype, shape, alloc_);
      if (!t.ok()) return Status(t.status()).WithContext(node_->Describe());
      scratch_.push_back(std::move(t).value());
      return &scratch_.back();
    }
    const PlanValue& v = plan_.values()[id];
    Tensor& slot = state_.values[id];
    if (v.arena_offset >= 0 && dtype == v.dtype && state_.planned[id].shape() == shape) {
      slot = state_.planned[id];
      state_.fresh[id] = 0;
      return &slot;
    }
    auto t = Tensor::Create(dtype, shape, alloc_);
    if (!t.ok()) return Status(t.status()).WithContext(node_->Describe());
    slot = std::move(t).value();
    state_.fresh[id] = 1;
    return &slot;
  }

  void SetOutput(int i, Tensor t) override {
    STRATA_CHECK(i >= 0 && i < num_outputs_, node_->Describe(), ": output index ", i, " out of range");
    const int id = step_.outputs[i];
    if (id < 0) return;
    state_.values[id] = std::move(t);
    state_.fresh[id] = 0;
  }

  Allocator* allocator() override { return alloc_; }

  StatusOr<void*> Scratch(size_t bytes) override {
    if (plan_.scratch_offset() >= 0 && static_cast<int64_t>(bytes) <= plan_.scratch_bytes() && state_.arena != nullptr)
      return static_cast<char*>(state_.arena) + plan_.scratch_offset();
    auto p = KernelContext::Scratch(bytes);
    if (!p.ok()) return Status(p.status()).WithContext(node_->Describe());
    return p;
  }

  Status RunSubgraph(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& feeds,
                     std::vector<Tensor>* outputs) override {
    const ValueLookup lookup = [this](const std::string& name) -> const Tensor* {
      const int id = plan_.ValueId(name);
      if (id < 0 || !state_.values[id].defined()) return nullptr;
      return &state_.values[id];
    };
    return InterpretGraph(g, feeds, lookup, alloc_, outputs);
  }

 private:
  const Plan& plan_;
  const PlanStep& step_;
  ExecState& state_;
  Allocator* alloc_;
  std::vector<Tensor> scratch_;
};

// Floating-point elements of `t` as doubles (float32/64 only; other dtypes give none).
template <typename Fn>
void ForEachFloat(const Tensor& t, Fn fn) {
  if (t.dtype() == DType::kFloat32) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < t.num_elements(); ++i) fn(i, static_cast<double>(p[i]));
  } else if (t.dtype() == DType::kFloat64) {
    const double* p = t.data<double>();
    for (int64_t i = 0; i < t.num_elements(); ++i) fn(i, p[i]);
  }
}

// "[min, max], 2 NaN, 1 inf" of a tensor's floating-point values.
std::string Range(const Tensor& t) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  int64_t nan = 0, inf = 0;
  ForEachFloat(t, [&](int64_t, double v) {
    if (std::isnan(v)) {
      ++nan;
    } else {
      if (std::isinf(v)) ++inf;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  });
  std::string out = lo <= hi ? StrCat("[", lo, ", ", hi, "]") : std::string("[no finite value]");
  if (nan > 0) out += StrCat(", ", nan, " NaN");
  if (inf > 0) out += StrCat(", ", inf, " inf");
  return out;
}

}  // namespace

// check_numerics: the first NaN or infinity in a step's output fails the run, naming the node, the output and what
// went in.
Status Plan::CheckNumerics(const PlanStep& step, const Tensor& out, const std::string& name,
                           const ExecState& state) const {
  int64_t first = -1, count = 0;
  ForEachFloat(out, [&](int64_t i, double v) {
    if (!std::isfinite(v)) {
      if (first < 0) first = i;
      ++count;
    }
  });
  if (count == 0) return Status::OK();
  std::vector<std::string> ins;
  for (int id : step.inputs)
    if (id >= 0 && state.values[id].defined())
      ins.push_back(StrCat("'", values_[id].name, "' ", state.values[id].TypeString(), " ", Range(state.values[id])));
  return InvalidArgumentError("check_numerics: ", step.node->Describe(), " produced ", count,
                              " non-finite values in its output '", name, "' ", out.TypeString(), " (the first at flat ",
                              "index ", first, "); its inputs: ", ins.empty() ? "none" : StrJoin(ins, "; "));
}

Plan::~Plan() {
  if (!profile_ || profiled_runs_ == 0) return;
  // Per step, and per kernel name summed, the mean wall time of a run: where the time outside the big primitives goes.
  double total = 0;
  for (double t : step_ms_) total += t;
  const double runs = static_cast<double>(profiled_runs_);
  std::vector<size_t> order(steps_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return step_ms_[a] > step_ms_[b]; });
  std::map<std::string, std::pair<double, int>> by_op;
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Node& n = *steps_[s].node;
    // A strata.ChannelsLast wrapper is listed with the op it wraps: "strata.ChannelsLast(BatchNormalization)".
    const std::string wrapped = n.domain == "strata" && n.op_type == "ChannelsLast" ? n.GetString("op", "") : "";
    auto& e = by_op[StrCat(n.domain.empty() ? "" : n.domain + ".", n.op_type,
                           wrapped.empty() ? "" : "(" + wrapped + ")", " [", steps_[s].kernel->name(), "]")];
    e.first += step_ms_[s];
    e.second += 1;
  }
  std::vector<std::pair<double, std::string>> ops;
  for (const auto& [k, v] : by_op) ops.emplace_back(v.first, StrCat(k, " x", v.second));
  std::sort(ops.rbegin(), ops.rend());
  std::string out = StrCat("profile: ", profiled_runs_, " runs, ", total / runs, " ms per run in ", steps_.size(),
                           " steps\n  by op type:\n");
  for (const auto& [t, k] : ops) out += StrCat("    ", t / runs, " ms ", k, "\n");
  out += "  slowest steps:\n";
  for (size_t i = 0; i < std::min<size_t>(order.size(), 25); ++i)
    out += StrCat("    ", step_ms_[order[i]] / runs, " ms [", order[i], "] ", steps_[order[i]].node->Describe(), " ",
                  steps_[order[i]].kernel->name(), "\n");
  LogInfo(out);
}

int Plan::ValueId(const std::string& name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? -1 : it->second;
}

StatusOr<std::unique_ptr<Plan>> Plan::Compile(const Graph& g, const std::vector<ValueInfo>& inputs,
                                              const SessionOptions& options, Allocator* alloc) {
  std::unique_ptr<Plan> plan(new Plan());
  plan->alloc_ = alloc;
  STRATA_RETURN_IF_ERROR(InferGraph(g, inputs, InferOptions{}, &plan->inferred_));

  auto add_value = [&](const std::string& name) -> int {
    auto [it, inserted] = plan->ids_.emplace(name, static_cast<int>(plan->values_.size()));
    if (inserted) {
      PlanValue v;
      v.name = name;
      const auto t = plan->inferred_.types.find(name);
      if (t != plan->inferred_.types.end()) {
        v.dtype = t->second.dtype;
        v.shape = t->second.shape;
      }
      plan->values_.push_back(std::move(v));
    }
    return it->second;
  };
  for (const ValueInfo& in : inputs) {
    const int id = add_value(in.name);
    plan->values_[id].is_input = true;
    plan->input_ids_.push_back(id);
  }
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& node = g.nodes[ni];
    if (plan->inferred_.folded[ni]) continue;
    PlanStep step;
    step.node = &node;
    step.schema = ops::OpRegistry::Global().Find(node.domain, node.op_type);
    for (const std::string& in : node.inputs) step.inputs.push_back(in.empty() ? -1 : add_value(in));
    for (const std::string& in : SubgraphOuterInputs(node)) step.implicit_inputs.push_back(add_value(in));
    const int step_index = static_cast<int>(plan->steps_.size());
    for (const std::string& out : node.outputs) {
      if (out.empty()) {
        step.outputs.push_back(-1);
        continue;
      }
      const int id = add_value(out);
      plan->values_[id].producer = step_index;
      if (step.schema->view_input >= 0 && step.schema->view_input < static_cast<int>(step.inputs.size()) &&
          &out == &node.outputs[0])
        plan->values_[id].view_of = step.inputs[step.schema->view_input];
      step.outputs.push_back(id);
    }
    plan->steps_.push_back(std::move(step));
  }
  // Constants: initializers and folded values that steps (or outputs) read.
  for (const ValueInfo& out : g.outputs) plan->values_[add_value(out.name)].is_output = true;
  plan->constants_.resize(plan->values_.size());
  for (size_t id = 0; id < plan->values_.size(); ++id) {
    PlanValue& v = plan->values_[id];
    auto c = plan->inferred_.constants.find(v.name);
    if (c != plan->inferred_.constants.end() && !v.is_input && v.producer < 0) {
      v.is_constant = true;
      plan->constants_[id] = c->second;
      // Folded values are this plan's own memory; initializers are the model's, shared by every plan.
      if (!g.initializers.count(v.name) && c->second.defined() && c->second.dtype() != DType::kString)
        plan->constant_bytes_ += static_cast<int64_t>(c->second.byte_size());
    } else if (!v.is_input && v.producer < 0) {
      return FailedPreconditionError("value '", v.name, "' is used but never produced");
    }
  }
  STRATA_RETURN_IF_ERROR(plan->AssignKernels(options));
  plan->profile_ = VerboseEnabled("profile");
  plan->check_numerics_ = options.check_numerics;
  plan->step_ms_.assign(plan->steps_.size(), 0.0);
  plan->ComputeLiveness();
  plan->PlanMemory(options.plan_memory);
  return plan;
}

Status Plan::CreateKernel(PlanStep& step, const SessionOptions& options, bool* fast) {
  static const ops::ValueType kUnknown;
  std::vector<ops::ValueType> ins, outs;
  for (int id : step.inputs) {
    if (id < 0) {
      ins.push_back(kUnknown);
      continue;
    }
    ops::ValueType vt{values_[id].dtype, values_[id].shape, nullptr};
    if (values_[id].is_constant) vt.value = &constants_[id];
    ins.push_back(std::move(vt));
  }
  for (int id : step.outputs) outs.push_back(id < 0 ? kUnknown : ops::ValueType{values_[id].dtype, values_[id].shape});
  ops::KernelInit init{*step.node, ins, outs, options.conv_algorithm, options.precision};
  step.kernel.reset();
  *fast = false;
  if (options.use_fast_kernels) {
    for (const ops::KernelEntry& entry : step.schema->kernels) {
      auto k = entry.create(init);
      if (k.ok()) {
        step.kernel = std::move(k).value();
        *fast = true;
        break;
      }
      if (k.status().code() != StatusCode::kUnimplemented)
        return Status(k.status()).WithContext(StrCat(step.node->Describe(), " [kernel ", entry.name, "]"));
      if (VerboseEnabled("dispatch"))
        LogInfo("dispatch: ", step.node->Describe(), ": ", entry.name, " declined: ", k.status().message());
    }
  }
  if (!step.kernel) step.kernel = ops::MakeReferenceKernel(*step.schema);
  return Status::OK();
}

Status Plan::AssignKernels(const SessionOptions& options) {
  for (PlanStep& step : steps_) {
    bool fast = false;
    STRATA_RETURN_IF_ERROR(CreateKernel(step, options, &fast));
  }
  STRATA_RETURN_IF_ERROR(StoreBf16(options));
  for (PlanStep& step : steps_) {
    // A kernel that makes its output a view of an input (ops::AliasKernel) is treated as a view op.
    if (const auto* ak = dynamic_cast<const ops::AliasKernel*>(step.kernel.get())) {
      const int i = ak->alias_input();
      if (i >= 0 && i < static_cast<int>(step.inputs.size()) && step.inputs[i] >= 0 && !step.outputs.empty() &&
          step.outputs[0] >= 0)
        values_[step.outputs[0]].view_of = step.inputs[i];
    }
    scratch_bytes_ = std::max<int64_t>(scratch_bytes_, static_cast<int64_t>(step.kernel->scratch_bytes()));
    if (VerboseEnabled("dispatch")) LogInfo("dispatch: ", step.node->Describe(), " -> ", step.kernel->name());
  }
  return Status::OK();
}

namespace {

bool Bf16ActivationsEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("STRATA_BF16_ACTIVATIONS");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return enabled;
}

}  // namespace

Status Plan::StoreBf16(const SessionOptions& options) {
  if (!options.use_fast_kernels || !Bf16ActivationsEnabled()) return Status::OK();
  // Readers per value (a value read twice by one step counts that step once).
  std::vector<std::vector<int>> readers(values_.size());
  std::vector<bool> implicit(values_.size(), false);
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (int id : steps_[s].inputs)
      if (id >= 0 && (readers[id].empty() || readers[id].back() != static_cast<int>(s)))
        readers[id].push_back(static_cast<int>(s));
    for (int id : steps_[s].implicit_inputs) implicit[id] = true;
  }
  auto bf16_kernel = [&](int s) { return steps_[s].kernel != nullptr && steps_[s].kernel->computes_bf16(); };
  // Step s takes value id in bfloat16: it computes in bfloat16, or reads every operand that is id in bfloat16
  // (ops::Bf16InputKernel).
  auto bf16_reader = [&](int s, int id) {
    if (bf16_kernel(s)) return true;
    const auto* k = dynamic_cast<const ops::Bf16InputKernel*>(steps_[s].kernel.get());
    if (k == nullptr) return false;
    for (size_t i = 0; i < steps_[s].inputs.size(); ++i)
      if (steps_[s].inputs[i] == id && !k->reads_bf16(static_cast<int>(i))) return false;
    return true;
  };
  // The producer computes in bfloat16, or writes its output 0 in bfloat16 on request (ops::Bf16OutputKernel).
  auto bf16_writer = [&](int id) {
    const PlanStep& p = steps_[values_[id].producer];
    const auto* w = dynamic_cast<const ops::Bf16OutputKernel*>(p.kernel.get());
    return bf16_kernel(values_[id].producer) ||
           (w != nullptr && w->writes_bf16() && !p.outputs.empty() && p.outputs[0] == id);
  };
  // Eligible: every reader takes the value in bfloat16 and its producer can write it so. Stored: eligible, and its
  // producer or a reader computes in bfloat16, or a reader's output 0 is stored (Relu between a batch norm and a
  // bfloat16 convolution: relu(bf16(z)) == bf16(relu(z))). A float32 graph (no kernel computing in bfloat16) thus
  // keeps every value float32 even where float32 kernels could pass bfloat16 along.
  std::vector<char> eligible(values_.size(), 0), marked(values_.size(), 0);
  for (size_t id = 0; id < values_.size(); ++id) {
    const PlanValue& v = values_[id];
    if (v.dtype != DType::kFloat32 || v.producer < 0 || v.is_input || v.is_output || v.is_constant || v.view_of >= 0 ||
        implicit[id] || readers[id].empty() || !v.shape.IsFullyKnown())
      continue;
    const int i = static_cast<int>(id);
    eligible[id] =
        std::all_of(readers[id].begin(), readers[id].end(), [&](int s) { return bf16_reader(s, i); }) && bf16_writer(i);
    marked[id] =
        eligible[id] && (bf16_kernel(v.producer) || std::any_of(readers[id].begin(), readers[id].end(), bf16_kernel));
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t id = 0; id < values_.size(); ++id) {
      if (!eligible[id] || marked[id]) continue;
      for (int r : readers[id])
        if (!steps_[r].outputs.empty() && steps_[r].outputs[0] >= 0 && marked[steps_[r].outputs[0]]) {
          marked[id] = 1;
          changed = true;
          break;
        }
    }
  }
  std::vector<int> stored;
  for (size_t id = 0; id < values_.size(); ++id)
    if (marked[id]) stored.push_back(static_cast<int>(id));
  if (stored.empty()) return Status::OK();
  for (int id : stored) values_[id].dtype = DType::kBFloat16;
  // Rebuild the kernels that touch a stored value; where one no longer computes in bfloat16 (its fast kernels
  // declined the bfloat16 operand), its values go back to float32 and the kernels touching them are rebuilt again.
  std::vector<bool> dirty(steps_.size(), false);
  for (int id : stored) {
    dirty[values_[id].producer] = true;
    for (int r : readers[id]) dirty[r] = true;
  }
  while (true) {
    std::vector<int> failed;
    for (size_t s = 0; s < steps_.size(); ++s) {
      if (!dirty[s]) continue;
      dirty[s] = false;
      bool fast = false;
      STRATA_RETURN_IF_ERROR(CreateKernel(steps_[s], options, &fast));
      // Every bfloat16 operand must be one the rebuilt kernel takes.
      bool ok = fast;
      for (int id : steps_[s].inputs)
        ok = ok && (id < 0 || values_[id].dtype != DType::kBFloat16 || bf16_reader(static_cast<int>(s), id));
      for (int id : steps_[s].outputs) ok = ok && (id < 0 || values_[id].dtype != DType::kBFloat16 || bf16_writer(id));
      if (!ok) failed.push_back(static_cast<int>(s));
    }
    if (failed.empty()) break;
    for (int s : failed) {
      auto revert = [&](int id) {
        if (id < 0 || values_[id].dtype != DType::kBFloat16) return;
        values_[id].dtype = DType::kFloat32;
        dirty[values_[id].producer] = true;
        for (int r : readers[id]) dirty[r] = true;
      };
      for (int id : steps_[s].inputs) revert(id);
      for (int id : steps_[s].outputs) revert(id);
      if (VerboseEnabled("dispatch"))
        LogInfo("dispatch: ", steps_[s].node->Describe(), ": its bfloat16 activations stay float32 (",
                steps_[s].kernel->name(), " took the node with them)");
    }
  }
  return Status::OK();
}

void Plan::ComputeLiveness() {
  const int end = static_cast<int>(steps_.size());
  for (int s = 0; s < end; ++s) {
    for (int id : steps_[s].inputs)
      if (id >= 0) values_[id].last_use = std::max(values_[id].last_use, s);
    for (int id : steps_[s].implicit_inputs) values_[id].last_use = std::max(values_[id].last_use, s);
  }
  for (PlanValue& v : values_) {
    if (v.is_output) v.last_use = end;
    if (v.last_use < 0) v.last_use = v.producer;  // produced but never read
  }
  // A view keeps the memory it points into alive: extend the source's lifetime (views of views chain backwards).
  for (int s = end - 1; s >= 0; --s)
    for (int id : steps_[s].outputs)
      if (id >= 0 && values_[id].view_of >= 0) {
        PlanValue& src = values_[values_[id].view_of];
        src.last_use = std::max(src.last_use, values_[id].last_use);
      }
  for (size_t id = 0; id < values_.size(); ++id) {
    const PlanValue& v = values_[id];
    if (v.producer >= 0 && !v.is_output && v.last_use >= 0 && v.last_use < end)
      steps_[v.last_use].release.push_back(static_cast<int>(id));
  }
}

namespace {

// Values placed in the arena, by lifetime [first step, last step], answering "which placed values are alive at some
// step of [a, b]" without a scan of every placed value (which made planning a long chain O(n^2)). A segment tree
// over the steps: a value is listed in `exact_` at the O(log n) nodes whose ranges make up its lifetime, and in
// `inside_` at every strict ancestor of those. Two lifetimes overlap iff a node of one is an ancestor-or-self of a
// node of the other, so a query reads `exact_` and `inside_` at its own nodes and `exact_` at their ancestors: every
// entry it reads overlaps, and k overlapping values cost O((k + 1) log n).
class LifetimeIndex {
 public:
  explicit LifetimeIndex(int steps) {
    while (size_ < steps) size_ *= 2;
    exact_.resize(2 * size_);
    inside_.resize(2 * size_);
    stamp_.assign(2 * size_, -1);
  }

  void Add(int id, int first, int last) {
    ++adds_;
    Cover(first, last, [&](int node) {
      exact_[node].push_back(id);
      for (int a = node / 2; a >= 1 && stamp_[a] != adds_; a /= 2) {
        stamp_[a] = adds_;
        inside_[a].push_back(id);
      }
    });
  }

  void Overlapping(int first, int last, std::vector<int>* out) {
    out->clear();
    ++queries_;
    auto take = [&](const std::vector<int>& ids) {
      for (int id : ids) {
        if (static_cast<size_t>(id) >= seen_.size()) seen_.resize(id + 1, -1);
        if (seen_[id] == queries_) continue;
        seen_[id] = queries_;
        out->push_back(id);
      }
    };
    Cover(first, last, [&](int node) {
      take(exact_[node]);
      take(inside_[node]);
      for (int a = node / 2; a >= 1; a /= 2) take(exact_[a]);
    });
  }

 private:
  // Calls fn(node) for the nodes whose ranges make up [first, last].
  template <typename Fn>
  void Cover(int first, int last, Fn fn) {
    for (int lo = first + size_, hi = last + size_ + 1; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) fn(lo++);
      if (hi & 1) fn(--hi);
    }
  }

  int size_ = 1;
  std::vector<std::vector<int>> exact_, inside_;
  std::vector<int> stamp_, seen_;
  int adds_ = 0, queries_ = 0;
};

}  // namespace

void Plan::PlanMemory(bool enabled) {
  arena_bytes_ = 0;
  if (!enabled) return;
  auto plannable = [&](const PlanValue& v) {
    return v.producer >= 0 && !v.is_output && v.view_of < 0 && v.dtype != DType::kString &&
           v.dtype != DType::kUndefined && v.shape.IsFullyKnown() &&
           steps_[v.producer].schema->view_input == -1;  // view ops may hand back memory they do not own
  };
  // In place: a step whose kernel may write output 0 over input i (ops::InplaceKernel) gets the input's block
  // when it is the input's last reader and the sizes agree; the block then lives until the output's last use.
  // share[id] is the value whose block `id` takes over (chains resolve to their first value).
  std::vector<int> share(values_.size(), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const PlanStep& step = steps_[s];
    const auto* ik = dynamic_cast<const ops::InplaceKernel*>(step.kernel.get());
    const int k = ik != nullptr ? ik->inplace_input() : -1;
    if (k < 0 || k >= static_cast<int>(step.inputs.size()) || step.outputs.empty()) continue;
    const int in = step.inputs[k], out = step.outputs[0];
    if (in < 0 || out < 0 || !plannable(values_[in]) || !plannable(values_[out])) continue;
    if (values_[in].last_use != static_cast<int>(s) || values_[in].dtype != values_[out].dtype ||
        values_[in].shape.ToShape().NumElements() != values_[out].shape.ToShape().NumElements())
      continue;
    bool read_twice = false;  // the step must not read the input through another operand (or a view) while it writes
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      if (static_cast<int>(i) == k) continue;
      for (int v = step.inputs[i]; v >= 0; v = values_[v].view_of) read_twice = read_twice || v == in;
    }
    if (read_twice) continue;
    int root = in;
    while (share[root] >= 0) root = share[root];
    share[out] = root;
    values_[root].last_use = std::max(values_[root].last_use, values_[out].last_use);
  }
  std::vector<int> candidates;
  for (size_t id = 0; id < values_.size(); ++id) {
    PlanValue& v = values_[id];
    if (!plannable(v)) continue;
    v.bytes = static_cast<size_t>(v.shape.ToShape().NumElements()) * DTypeSize(v.dtype);
    if (v.bytes == 0 || share[id] >= 0) continue;
    candidates.push_back(static_cast<int>(id));
  }
  // Greedy by size: each value takes the lowest offset that does not overlap, in memory, a placed value whose
  // lifetime overlaps its own.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int a, int b) { return values_[a].bytes > values_[b].bytes; });
  LifetimeIndex placed(static_cast<int>(steps_.size()) + 1);  // lifetimes lie in [0, steps]
  std::vector<int> overlapping;
  for (int id : candidates) {
    PlanValue& v = values_[id];
    const int64_t size = (static_cast<int64_t>(v.bytes) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of time-overlapping values
    placed.Overlapping(v.producer, v.last_use, &overlapping);
    for (int p : overlapping) {
      const PlanValue& o = values_[p];
      const int64_t osize = (static_cast<int64_t>(o.bytes) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
      busy.emplace_back(o.arena_offset, o.arena_offset + osize);
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (offset + size <= b) break;
      offset = std::max(offset, e);
    }
    v.arena_offset = offset;
    arena_bytes_ = std::max(arena_bytes_, offset + size);
    placed.Add(id, v.producer, v.last_use);
  }
  for (size_t id = 0; id < values_.size(); ++id) {
    if (share[id] < 0) continue;
    int root = share[id];
    while (share[root] >= 0) root = share[root];
    values_[id].arena_offset = values_[root].arena_offset;  // -1 when the root got no block (size 0)
  }
  // Kernel scratch after the values: every step may use it while it runs.
  if (scratch_bytes_ > 0) {
    scratch_offset_ = (arena_bytes_ + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    arena_bytes_ = scratch_offset_ + (scratch_bytes_ + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  }
}

std::unique_ptr<ExecState> Plan::AcquireState() const {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      auto s = std::move(pool_.back());
      pool_.pop_back();
      return s;
    }
  }
  return nullptr;
}

void Plan::ReleaseState(std::unique_ptr<ExecState> state) const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  pool_.push_back(std::move(state));
}

namespace {
thread_local const RunHooks* current_run_hooks = nullptr;
}  // namespace

const RunHooks* CurrentRunHooks() { return current_run_hooks; }
ScopedRunHooks::ScopedRunHooks(const RunHooks* hooks) : previous_(current_run_hooks) { current_run_hooks = hooks; }
ScopedRunHooks::~ScopedRunHooks() { current_run_hooks = previous_; }

// The trace of one step that ran from t0_us until now: a complete event named after the node, its op type as the
// category, and the memory counter after it.
void Plan::TraceStep(const PlanStep& step, const ExecState& state, double t0_us, PlanTrace* trace) const {
  const double t1 = trace->profiler->NowMicros();
  TraceEvent e;
  e.name = step.node->name.empty() ? step.node->op_type : step.node->name;
  // The category is the bare op type: "strata.*" categories are the profiler's own (run, compile, memory, step), and
  // a helper op of the strata domain (FusedConv) must not look like one; its domain goes into the args.
  e.cat = step.node->op_type;
  e.ts_us = t0_us;
  e.dur_us = std::max(0.0, t1 - t0_us);
  e.tid = trace->tid;
  std::vector<std::string> shapes;
  int64_t out_bytes = 0;
  for (int id : step.outputs) {
    if (id < 0 || !state.values[id].defined()) continue;
    const Tensor& t = state.values[id];
    shapes.push_back(t.TypeString());
    if (t.dtype() != DType::kString) out_bytes += static_cast<int64_t>(t.byte_size());
  }
  std::vector<std::string> in_shapes;
  for (int id : step.inputs)
    if (id >= 0 && state.values[id].defined()) in_shapes.push_back(state.values[id].TypeString());
  e.str_args = {{"op_type", e.cat}, {"kernel", std::string(step.kernel->name())},
                {"inputs", StrJoin(in_shapes, ", ")}, {"outputs", StrJoin(shapes, ", ")}};
  if (!step.node->domain.empty()) e.str_args.emplace_back("domain", step.node->domain);
  e.num_args = {{"output_bytes", static_cast<double>(out_bytes)}, {"arena_bytes", static_cast<double>(arena_bytes_)}};
  trace->events.push_back(std::move(e));
  TraceEvent m;
  m.name = "memory";
  m.cat = "strata.memory";
  m.ph = 'C';
  m.ts_us = t1;
  m.tid = trace->tid;
  m.num_args = {{"allocator_bytes_in_use", static_cast<double>(state.alloc->bytes_in_use())},
                {"arena_bytes", static_cast<double>(arena_bytes_)}};
  trace->events.push_back(std::move(m));
}

Status Plan::Run(const std::vector<const Tensor*>& inputs, const std::vector<int>& fetch_ids,
                 std::vector<Tensor>* results, PlanTrace* trace) const {
  const RunHooks* hooks = CurrentRunHooks();
  std::unique_ptr<ExecState> state = AcquireState();
  if (!state) {
    state = std::make_unique<ExecState>();
    state->alloc = alloc_;
    if (arena_bytes_ > 0) {
      auto mem = alloc_->Allocate(static_cast<size_t>(arena_bytes_));
      if (!mem.ok()) {
        // Name the biggest planned value so the user knows which node drives the memory use.
        const PlanValue* biggest = nullptr;
        for (const PlanValue& v : values_)
          if (v.arena_offset >= 0 && (biggest == nullptr || v.bytes > biggest->bytes)) biggest = &v;
        const std::string largest =
            biggest == nullptr || static_cast<int64_t>(biggest->bytes) < scratch_bytes_
                ? StrCat("the largest is kernel scratch memory, ", scratch_bytes_, " bytes")
                : StrCat("the largest is '", biggest->name, "' of ", steps_[biggest->producer].node->Describe(), ", ",
                         biggest->bytes, " bytes");
        return ResourceExhaustedError("the execution plan needs ", arena_bytes_, " bytes for intermediate values (",
                                      largest, "): ", mem.status().message());
      }
      state->arena = *mem;
      state->arena_bytes = static_cast<size_t>(arena_bytes_);
      states_.fetch_add(1, std::memory_order_relaxed);
    }
    state->values.resize(values_.size());
    state->planned.resize(values_.size());
    state->fresh.assign(values_.size(), 0);
    for (size_t id = 0; id < values_.size(); ++id) {
      const PlanValue& v = values_[id];
      if (v.arena_offset >= 0)
        state->planned[id] =
            Tensor::Wrap(v.dtype, v.shape.ToShape(), static_cast<char*>(state->arena) + v.arena_offset);
    }
    size_t max_inputs = 0;
    for (const PlanStep& s : steps_) max_inputs = std::max(max_inputs, s.inputs.size());
    state->ins.resize(max_inputs);
  }
  for (size_t id = 0; id < values_.size(); ++id)
    if (values_[id].is_constant) state->values[id] = constants_[id];
  for (size_t i = 0; i < input_ids_.size(); ++i) state->values[input_ids_[i]] = *inputs[i];

  Status status;
  // RunHooks::on_fetch_ready: the fetches each step completes (-1: those ready before the first step).
  std::vector<std::vector<size_t>> ready_at;
  const bool notify = hooks != nullptr && hooks->on_fetch_ready;
  if (notify) {
    ready_at.resize(steps_.size() + 1);
    for (size_t f = 0; f < fetch_ids.size(); ++f) {
      const int producer = fetch_ids[f] >= 0 ? values_[fetch_ids[f]].producer : -1;
      ready_at[producer + 1].push_back(f);
    }
    for (size_t f : ready_at[0]) {
      status = hooks->on_fetch_ready(f, state->values[fetch_ids[f]]);
      if (!status.ok()) break;
    }
  }
  std::vector<double> times;
  if (profile_) times.assign(steps_.size(), 0.0);
  for (size_t s = 0; s < steps_.size() && status.ok(); ++s) {
    const PlanStep& step = steps_[s];
    for (size_t i = 0; i < step.inputs.size(); ++i)
      state->ins[i] = step.inputs[i] >= 0 ? &state->values[step.inputs[i]] : nullptr;
    PlanKernelContext ctx(*this, step, *state, alloc_);
    const auto t0 = profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    const double trace_t0 = trace != nullptr ? trace->profiler->NowMicros() : 0.0;
    status = step.kernel->Run(ctx);
    if (profile_) times[s] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (trace != nullptr) TraceStep(step, *state, trace_t0, trace);
    if (!status.ok()) {
      if (status.message().find(step.node->Describe()) == std::string::npos) status.WithContext(step.node->Describe());
      break;
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      const int id = step.outputs[i];
      if (id >= 0 && !state->values[id].defined()) {
        status =
            InternalError(step.node->Describe(), ": kernel '", step.kernel->name(), "' did not produce output ", i);
        break;
      }
      if (check_numerics_ && id >= 0) {
        status = CheckNumerics(step, state->values[id], values_[id].name, *state);
        if (!status.ok()) break;
      }
    }
    if (!status.ok()) break;
    for (int id : step.release) state->values[id] = Tensor();
    if (notify)
      for (size_t f : ready_at[s + 1]) {
        status = hooks->on_fetch_ready(f, state->values[fetch_ids[f]]);
        if (!status.ok()) break;
      }
    if (status.ok() && hooks != nullptr && hooks->after_step) status = hooks->after_step();
    if (!status.ok()) break;
  }
  if (status.ok()) {
    results->clear();
    for (size_t f = 0; f < fetch_ids.size(); ++f) {
      if (hooks != nullptr && f < hooks->taken_fetches.size() && hooks->taken_fetches[f]) {
        results->emplace_back();  // the caller took it through on_fetch_ready: no copy
        continue;
      }
      const Tensor& t = state->values[fetch_ids[f]];
      // Memory this run allocated can be handed over; views of inputs, constants or the arena are copied.
      results->push_back(state->fresh[fetch_ids[f]] ? t : t.Clone());
    }
  }
  for (auto& t : state->values) t = Tensor();
  std::fill(state->fresh.begin(), state->fresh.end(), 0);
  if (profile_ && status.ok()) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    for (size_t s = 0; s < steps_.size(); ++s) step_ms_[s] += times[s];
    ++profiled_runs_;
  }
  ReleaseState(std::move(state));
  return status;
}

std::string Plan::Describe() const {
  std::string out =
      StrCat("plan: ", steps_.size(), " steps, arena ", arena_bytes_, " bytes (kernel scratch ", scratch_bytes_, ")\n");
  for (size_t s = 0; s < steps_.size(); ++s) {
    const PlanStep& step = steps_[s];
    out += StrCat("  [", s, "] ", step.node->Describe(), " kernel=", step.kernel->name(), " ->");
    for (int id : step.outputs) {
      if (id < 0) continue;
      const PlanValue& v = values_[id];
      out += StrCat(" ", v.name, ":", DTypeName(v.dtype), v.shape.ToString());
      if (v.arena_offset >= 0) out += StrCat("@", v.arena_offset);
    }
    out += "\n";
  }
  return out;
}

}  // namespace strata::graph
