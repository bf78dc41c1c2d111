#include <algorithm>
#include <map>
#include <mutex>

#include "core/logging.h"
#include "core/parallel.h"
#include "graph/passes/passes.h"
#include "graph/plan.h"
#include "strata/graph.h"

namespace strata::graph {

struct Session::Impl {
  SessionOptions options;
  std::unique_ptr<LimitedAllocator> alloc;
  Graph graph;  // sorted, verified and optimised copy of the model's graph
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Plan>> plans;  // by input shapes
  RunStats stats;
};

namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string DescribeSignature(const std::vector<SignatureEntry>& entries) {
  std::vector<std::string> parts;
  for (const auto& e : entries) parts.push_back(StrCat("'", e.name, "' ", DTypeName(e.dtype), e.shape.ToString()));
  return StrJoin(parts, ", ");
}

std::string PlanKey(const std::vector<std::pair<std::string, Shape>>& shapes) {
  std::string key;
  for (const auto& [name, s] : shapes) key += StrCat(s.ToString(), ";");
  return key;
}

}  // namespace

Session::~Session() {
  // Results handed to callers were allocated by this session's allocator and may outlive the session (a trainer's
  // updated weights, a prediction): their buffers free through the allocator later. So the allocator is orphaned,
  // not deleted: it deletes itself when the last of them comes back.
  if (!impl_) return;
  impl_->plans.clear();  // arenas go back first
  if (impl_->alloc) impl_->alloc.release()->Orphan();
}

StatusOr<std::unique_ptr<Session>> Session::Create(std::shared_ptr<const Model> model, SessionOptions options) {
  std::unique_ptr<Session> s(new Session());
  s->model_ = std::move(model);
  s->impl_ = std::make_unique<Impl>();
  s->impl_->options = options;
  s->impl_->alloc = std::make_unique<LimitedAllocator>(options.memory_limit_bytes);
  if (options.intra_op_threads > 0) SetIntraOpThreads(options.intra_op_threads);
  Graph& g = s->impl_->graph;
  g = s->model_->graph;
  STRATA_RETURN_IF_ERROR(TopologicalSort(&g));
  STRATA_RETURN_IF_ERROR(VerifyGraph(g));
  if (options.optimize) STRATA_RETURN_IF_ERROR(RunDefaultPasses(&g, options));
  for (const ValueInfo& in : g.inputs) s->inputs_.push_back({in.name, in.dtype, in.shape});
  for (const ValueInfo& out : g.outputs) s->outputs_.push_back({out.name, out.dtype, out.shape});
  return s;
}

const Graph& Session::optimized_graph() const { return impl_->graph; }

RunStats Session::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

namespace {

StatusOr<std::shared_ptr<Plan>> GetPlan(Session::Impl& impl, const std::vector<SignatureEntry>& sig,
                                        const std::vector<std::pair<std::string, Shape>>& shapes, bool count) {
  const std::string key = PlanKey(shapes);
  std::lock_guard<std::mutex> lock(impl.mu);
  auto it = impl.plans.find(key);
  if (it != impl.plans.end()) {
    if (count) ++impl.stats.plan_cache_hits;
    return it->second;
  }
  std::vector<ValueInfo> inputs;
  for (size_t i = 0; i < sig.size(); ++i) inputs.push_back({sig[i].name, sig[i].dtype, PartialShape::Of(shapes[i].second)});
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, Plan::Compile(impl.graph, inputs, impl.options, impl.alloc.get()));
  if (count) ++impl.stats.plan_cache_misses;
  if (VerboseEnabled("plan")) LogInfo("compiled plan for input shapes ", key, "\n", plan->Describe());
  std::shared_ptr<Plan> shared = std::move(plan);
  impl.plans[key] = shared;
  return shared;
}

// Orders `shapes` by the signature and checks every input is there exactly once.
StatusOr<std::vector<std::pair<std::string, Shape>>> OrderShapes(
    const std::vector<SignatureEntry>& sig, const std::vector<std::pair<std::string, Shape>>& shapes) {
  std::vector<std::pair<std::string, Shape>> ordered;
  for (const auto& e : sig) {
    auto it = std::find_if(shapes.begin(), shapes.end(), [&](const auto& p) { return p.first == e.name; });
    if (it == shapes.end())
      return InvalidArgumentError("missing input '", e.name, "'; the model expects ", DescribeSignature(sig));
    ordered.push_back(*it);
  }
  return ordered;
}

}  // namespace

Status Session::Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
                    std::vector<Tensor>* results) {
  // Check names, dtypes and shapes against the signature.
  for (const auto& feed : feeds) {
    // No structured binding here: clang 14 (the fuzz build) cannot capture one in the lambda below.
    const std::string& name = feed.first;
    const Tensor& t = feed.second;
    auto it = std::find_if(inputs_.begin(), inputs_.end(), [&](const SignatureEntry& e) { return e.name == name; });
    if (it == inputs_.end()) {
      std::string closest;
      size_t best = SIZE_MAX;
      for (const auto& e : inputs_) {
        const size_t d = EditDistance(name, e.name);
        if (d < best) {
          best = d;
          closest = e.name;
        }
      }
      return InvalidArgumentError("unknown input '", name, "'", closest.empty() ? "" : StrCat(" (did you mean '", closest, "'?)"),
                                  "; the model expects ", DescribeSignature(inputs_));
    }
    if (!t.defined()) return InvalidArgumentError("input '", name, "' is an undefined tensor");
    if (it->dtype != DType::kUndefined && t.dtype() != it->dtype)
      return InvalidArgumentError("input '", name, "' expects ", DTypeName(it->dtype), it->shape.ToString(), ", got ",
                                  t.TypeString());
    if (!it->shape.Accepts(t.shape()))
      return InvalidArgumentError("input '", name, "' expects shape ", it->shape.ToString(), " ", DTypeName(it->dtype),
                                  ", got ", t.shape().ToString(), " ", DTypeName(t.dtype()));
  }
  std::vector<std::pair<std::string, Shape>> shapes;
  for (const auto& [name, t] : feeds) shapes.emplace_back(name, t.shape());
  STRATA_ASSIGN_OR_RETURN(auto ordered, OrderShapes(inputs_, shapes));
  if (feeds.size() != inputs_.size())
    return InvalidArgumentError("an input is fed more than once; the model expects ", DescribeSignature(inputs_));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan, GetPlan(*impl_, inputs_, ordered, true));

  std::vector<const Tensor*> ins;
  for (const auto& e : inputs_)
    for (const auto& f : feeds)
      if (f.first == e.name) ins.push_back(&f.second);
  std::vector<int> fetch_ids;
  if (fetches.empty()) {
    for (const auto& o : outputs_) fetch_ids.push_back(plan->ValueId(o.name));
  } else {
    for (const std::string& name : fetches) {
      auto it = std::find_if(outputs_.begin(), outputs_.end(), [&](const SignatureEntry& e) { return e.name == name; });
      if (it == outputs_.end())
        return InvalidArgumentError("unknown output '", name, "'; the model's outputs are ", DescribeSignature(outputs_));
      fetch_ids.push_back(plan->ValueId(name));
    }
  }
  Status s = plan->Run(ins, fetch_ids, results);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    ++impl_->stats.runs;
  }
  return s;
}

StatusOr<int64_t> Session::PlannedPeakBytes(const std::vector<std::pair<std::string, Shape>>& input_shapes) {
  STRATA_ASSIGN_OR_RETURN(auto ordered, OrderShapes(inputs_, input_shapes));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan, GetPlan(*impl_, inputs_, ordered, false));
  return plan->arena_bytes();
}

StatusOr<std::string> Session::DescribePlan(const std::vector<std::pair<std::string, Shape>>& input_shapes) {
  STRATA_ASSIGN_OR_RETURN(auto ordered, OrderShapes(inputs_, input_shapes));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan, GetPlan(*impl_, inputs_, ordered, false));
  return plan->Describe();
}

}  // namespace strata::graph
