#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <list>
#include <mutex>
#include <unordered_map>

#include "core/logging.h"
#include "core/parallel.h"
#include "graph/passes/passes.h"
#include "graph/plan.h"
#include "strata/graph.h"

namespace strata::graph {

// The compiled plans, one per distinct set of input shapes, in least-recently-used order (front = newest). Bounded
// by count and by the bytes the plans hold (Plan::held_bytes); the newest plan always stays, whatever its size. A plan
// evicted while a run uses it lives until that run ends (shared_ptr).
struct PlanCache {
  struct Entry {
    std::string key;
    std::shared_ptr<Plan> plan;
  };
  std::list<Entry> lru;
  std::unordered_map<std::string, std::list<Entry>::iterator> index;
};

struct Session::Impl {
  SessionOptions options;
  std::unique_ptr<LimitedAllocator> alloc;
  Graph graph;  // sorted, verified and optimised copy of the model's graph
  mutable std::mutex mu;
  PlanCache cache;
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

// Narrows the model's declared inputs by an input signature (SessionOptions::input_signature): every entry must name
// an input (an unnamed one: the only input), agree on the dtype and rank, and agree with every dimension the model
// fixes; its known dimensions then become the input's.
Status ApplyInputSignature(const std::vector<SignatureEntry>& signature, std::vector<SignatureEntry>* inputs) {
  for (const SignatureEntry& e : signature) {
    SignatureEntry* in = nullptr;
    if (e.name.empty()) {
      if (inputs->size() != 1)
        return InvalidArgumentError("input_signature: an entry without a name needs a model with one input; the model "
                                    "has ", inputs->size(), ": ", DescribeSignature(*inputs));
      in = &inputs->front();
    } else {
      for (SignatureEntry& i : *inputs)
        if (i.name == e.name) in = &i;
      if (in == nullptr)
        return InvalidArgumentError("input_signature names input '", e.name, "', which the model does not have; the "
                                    "model expects ", DescribeSignature(*inputs));
    }
    const std::string where = StrCat("input_signature for input '", in->name, "'");
    if (e.dtype != DType::kUndefined && in->dtype != DType::kUndefined && e.dtype != in->dtype)
      return InvalidArgumentError(where, ": dtype ", DTypeName(e.dtype), ", but the model declares ",
                                  DTypeName(in->dtype));
    if (!e.shape.rank_known) continue;
    if (in->shape.rank_known && in->shape.rank() != e.shape.rank())
      return InvalidArgumentError(where, ": shape ", e.shape.ToString(), " has rank ", e.shape.rank(),
                                  ", but the model declares ", in->shape.ToString());
    PartialShape merged = e.shape;
    for (int d = 0; d < e.shape.rank(); ++d) {
      const Dim model_dim = in->shape.rank_known ? in->shape.dims[d] : Dim();
      if (e.shape.dims[d].known() && model_dim.known() && e.shape.dims[d].value != model_dim.value)
        return InvalidArgumentError(where, ": shape ", e.shape.ToString(), " has ", e.shape.dims[d].value,
                                    " at dimension ", d, ", but the model declares ", in->shape.ToString());
      if (!e.shape.dims[d].known()) merged.dims[d] = model_dim;
    }
    in->shape = merged;
    if (e.dtype != DType::kUndefined) in->dtype = e.dtype;
  }
  return Status::OK();
}

}  // namespace

Session::~Session() {
  // Results handed to callers were allocated by this session's allocator and may outlive the session (a trainer's
  // updated weights, a prediction): their buffers free through the allocator later. So the allocator is orphaned,
  // not deleted: it deletes itself when the last of them comes back.
  if (!impl_) return;
  impl_->cache = {};  // arenas go back first
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
  STRATA_RETURN_IF_ERROR(ApplyInputSignature(options.input_signature, &s->inputs_));
  return s;
}

const Graph& Session::optimized_graph() const { return impl_->graph; }

RunStats Session::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  RunStats st = impl_->stats;
  st.plans_cached = static_cast<int64_t>(impl_->cache.lru.size());
  st.plan_cache_bytes = 0;
  for (const auto& e : impl_->cache.lru) st.plan_cache_bytes += e.plan->held_bytes();
  return st;
}

namespace {

// Drops plans from the cache's old end: those beyond the count and byte bounds (`keep`, the newest, always stays), or,
// with `idle_only`, every plan but `keep` that no run is using (to give their memory back when an allocation
// failed). Returns the plans dropped, so that the caller frees them outside the lock. Called with impl.mu held.
std::vector<std::shared_ptr<Plan>> EvictPlans(Session::Impl& impl, const Plan* keep, bool idle_only) {
  std::vector<std::shared_ptr<Plan>> dropped;
  PlanCache& c = impl.cache;
  const SessionOptions& o = impl.options;
  int64_t bytes = 0;
  for (const auto& e : c.lru) bytes += e.plan->held_bytes();
  for (auto it = c.lru.end(); it != c.lru.begin();) {
    --it;
    if (it->plan.get() == keep) continue;
    const bool over = (o.plan_cache_max_plans > 0 && c.lru.size() > o.plan_cache_max_plans) ||
                      (o.plan_cache_max_bytes > 0 && bytes > static_cast<int64_t>(o.plan_cache_max_bytes));
    const bool idle = it->plan.use_count() == 1;
    if (!(idle_only ? idle : over)) continue;
    bytes -= it->plan->held_bytes();
    c.index.erase(it->key);
    dropped.push_back(std::move(it->plan));
    it = c.lru.erase(it);
    ++impl.stats.plan_cache_evictions;
  }
  return dropped;
}

// Frees evicted plans (their arenas and kernels) and hands the freed pages back to the system: glibc keeps freed
// blocks of this size in its heap otherwise, and the process's memory would not come down after an eviction.
void FreePlans(std::vector<std::shared_ptr<Plan>> dropped) {
  if (dropped.empty()) return;
  dropped.clear();
  malloc_trim(0);
}

// oneDNN 2.6 does not check every allocation it makes while it creates a primitive (its JIT code buffers): under an
// address-space limit (ulimit -v, prlimit --as) that is nearly used up, creating one crashes the process. So, under
// such a limit, a plan is compiled only when this much address space is still free: a reservation that is mapped
// and unmapped at once (PROT_NONE: no memory is touched or committed).
constexpr size_t kCompileHeadroomBytes = size_t{64} << 20;

Status CheckCompileHeadroom() {
  struct rlimit lim;
  if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return Status::OK();
  void* p = mmap(nullptr, kCompileHeadroomBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return ResourceExhaustedError("not enough address space left to compile an execution plan: ",
                                  kCompileHeadroomBytes >> 20, " MiB must be free under the process's limit of ",
                                  lim.rlim_cur >> 20, " MiB (RLIMIT_AS)");
  munmap(p, kCompileHeadroomBytes);
  return Status::OK();
}

StatusOr<std::shared_ptr<Plan>> CompilePlan(Session::Impl& impl, const std::vector<SignatureEntry>& sig,
                                            const std::vector<std::pair<std::string, Shape>>& shapes) {
  STRATA_RETURN_IF_ERROR(CheckCompileHeadroom());
  std::vector<ValueInfo> inputs;
  for (size_t i = 0; i < sig.size(); ++i) inputs.push_back({sig[i].name, sig[i].dtype, PartialShape::Of(shapes[i].second)});
  auto plan = Plan::Compile(impl.graph, inputs, impl.options, impl.alloc.get());
  if (!plan.ok()) return plan.status();
  return std::shared_ptr<Plan>(std::move(plan).value());
}

StatusOr<std::shared_ptr<Plan>> GetPlan(Session::Impl& impl, const std::vector<SignatureEntry>& sig,
                                        const std::vector<std::pair<std::string, Shape>>& shapes, bool count,
                                        bool* compiled_now = nullptr) {
  const std::string key = PlanKey(shapes);
  std::unique_lock<std::mutex> lock(impl.mu);
  auto it = impl.cache.index.find(key);
  if (it != impl.cache.index.end()) {
    if (count) ++impl.stats.plan_cache_hits;
    impl.cache.lru.splice(impl.cache.lru.begin(), impl.cache.lru, it->second);  // now the newest
    return it->second->plan;
  }
  // Compiled under the lock: concurrent requests of one new shape compile it once.
  auto compiled = CompilePlan(impl, sig, shapes);
  if (!compiled.ok() && compiled.status().code() == StatusCode::kResourceExhausted) {
    // Out of memory (the session's limit or the system's): give back what idle plans hold and try once more.
    auto dropped = EvictPlans(impl, nullptr, /*idle_only=*/true);
    if (!dropped.empty()) {
      lock.unlock();
      FreePlans(std::move(dropped));
      lock.lock();
      compiled = CompilePlan(impl, sig, shapes);
    }
  }
  if (!compiled.ok()) return compiled.status();
  std::shared_ptr<Plan> plan = std::move(compiled).value();
  if (compiled_now != nullptr) *compiled_now = true;
  if (count) ++impl.stats.plan_cache_misses;
  if (VerboseEnabled("plan")) LogInfo("compiled plan for input shapes ", key, "\n", plan->Describe());
  auto existing = impl.cache.index.find(key);  // another thread may have added it while the lock was dropped
  if (existing != impl.cache.index.end()) return existing->second->plan;
  impl.cache.lru.push_front({key, plan});
  impl.cache.index[key] = impl.cache.lru.begin();
  auto dropped = EvictPlans(impl, plan.get(), /*idle_only=*/false);
  lock.unlock();
  FreePlans(std::move(dropped));
  return plan;
}

// Runs `plan`; when memory ran out (its arena or a value allocated while it ran), gives back the memory of the
// session's idle plans and tries once more. A run reads its inputs and writes only memory of its own, so running it
// again is safe.
Status RunPlan(Session::Impl& impl, const std::shared_ptr<Plan>& plan, const std::vector<const Tensor*>& ins,
               const std::vector<int>& fetch_ids, std::vector<Tensor>* results, PlanTrace* trace) {
  Status s = plan->Run(ins, fetch_ids, results, trace);
  if (s.code() != StatusCode::kResourceExhausted) return s;
  std::vector<std::shared_ptr<Plan>> dropped;
  {
    std::lock_guard<std::mutex> lock(impl.mu);
    dropped = EvictPlans(impl, plan.get(), /*idle_only=*/true);
  }
  if (dropped.empty()) return s;
  FreePlans(std::move(dropped));
  if (trace != nullptr) trace->events.clear();
  return plan->Run(ins, fetch_ids, results, trace);
}

// A small stable id per thread, for the trace's tid.
int64_t TraceThreadId() {
  static std::atomic<int64_t> next{1};
  thread_local const int64_t id = next.fetch_add(1);
  return id;
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
  ApplyIntraOpThreads();  // this thread may have been started before the setting, or by a server
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
                                  impl_->options.input_signature.empty() ? "" : " (input signature)", ", got ",
                                  t.shape().ToString(), " ", DTypeName(t.dtype()));
  }
  std::vector<std::pair<std::string, Shape>> shapes;
  for (const auto& [name, t] : feeds) shapes.emplace_back(name, t.shape());
  STRATA_ASSIGN_OR_RETURN(auto ordered, OrderShapes(inputs_, shapes));
  if (feeds.size() != inputs_.size())
    return InvalidArgumentError("an input is fed more than once; the model expects ", DescribeSignature(inputs_));
  Profiler* profiler = impl_->options.profiler.get();
  const bool profiled = profiler != nullptr && profiler->active() && profiler->BeginRun();
  if (profiled) return ProfiledRun(feeds, fetches, ordered, results);
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan, GetPlan(*impl_, inputs_, ordered, true));
  return RunWithPlan(plan, feeds, fetches, results, nullptr);
}

// A run that the profiler records: the plan lookup (a compile, when it misses), every step, and the run as a whole.
Status Session::ProfiledRun(const std::vector<std::pair<std::string, Tensor>>& feeds,
                            const std::vector<std::string>& fetches,
                            const std::vector<std::pair<std::string, Shape>>& ordered, std::vector<Tensor>* results) {
  Profiler& profiler = *impl_->options.profiler;
  PlanTrace trace;
  trace.profiler = &profiler;
  trace.tid = TraceThreadId();
  const double t0 = profiler.NowMicros();
  bool compiled = false;
  auto plan = GetPlan(*impl_, inputs_, ordered, true, &compiled);
  const double t1 = profiler.NowMicros();
  std::vector<std::string> shapes;
  for (const auto& [name, shape] : ordered) shapes.push_back(StrCat(name, ":", shape.ToString()));
  if (compiled) {
    TraceEvent c;
    c.name = "compile plan";
    c.cat = "strata.compile";
    c.ts_us = t0;
    c.dur_us = t1 - t0;
    c.tid = trace.tid;
    c.str_args = {{"input_shapes", StrJoin(shapes, ", ")}};
    trace.events.push_back(std::move(c));
  }
  Status s = plan.ok() ? RunWithPlan(*plan, feeds, fetches, results, &trace) : plan.status();
  TraceEvent r;
  r.name = "Session::Run";
  r.cat = "strata.run";
  r.ts_us = t0;
  r.dur_us = profiler.NowMicros() - t0;
  r.tid = trace.tid;
  r.str_args = {{"input_shapes", StrJoin(shapes, ", ")}, {"status", s.ok() ? "OK" : s.ToString()}};
  if (plan.ok()) r.num_args = {{"arena_bytes", static_cast<double>((*plan)->arena_bytes())}};
  trace.events.insert(trace.events.begin(), std::move(r));
  profiler.EndRun(std::move(trace.events));
  return s;
}

Status Session::RunWithPlan(const std::shared_ptr<Plan>& plan, const std::vector<std::pair<std::string, Tensor>>& feeds,
                            const std::vector<std::string>& fetches, std::vector<Tensor>* results, PlanTrace* trace) {
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
  Status s = RunPlan(*impl_, plan, ins, fetch_ids, results, trace);
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
