// A Plan is a graph compiled for one set of concrete input shapes: folded constants, the steps left to run with
// their kernels (prepared once), and a static memory plan (liveness-based reuse of one arena). Plans are immutable
// and shared by concurrent runs; each run borrows an ExecState (arena + value table) from the plan's pool.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/infer.h"
#include "ops/op.h"
#include "strata/graph.h"

namespace strata::graph {

struct PlanValue {
  std::string name;
  DType dtype = DType::kUndefined;
  PartialShape shape;
  bool is_input = false;
  bool is_constant = false;
  bool is_output = false;     // a graph output: allocated fresh each run and handed to the caller
  int producer = -1;          // step index
  int last_use = -1;          // last step that reads it (or a view of it)
  int view_of = -1;           // value whose memory this one may share (view ops)
  int64_t arena_offset = -1;  // >= 0 when planned into the arena
  size_t bytes = 0;
};

struct PlanStep {
  const Node* node = nullptr;
  const ops::OpSchema* schema = nullptr;
  std::unique_ptr<ops::Kernel> kernel;
  std::vector<int> inputs;           // value ids, -1 for omitted
  std::vector<int> outputs;          // value ids, -1 for unused
  std::vector<int> implicit_inputs;  // values the node's subgraphs read from this graph (If/Loop/Scan bodies)
  std::vector<int> release;          // dynamic values whose last use is this step
};

struct ExecState;

// What a profiled run collects (Session::Run hands the events to its Profiler at the end).
struct PlanTrace {
  const Profiler* profiler = nullptr;  // the time base
  int64_t tid = 0;
  std::vector<TraceEvent> events;
};

class Plan {
 public:
  // Compiles `g` (nodes topologically sorted) for the given input types.
  static StatusOr<std::unique_ptr<Plan>> Compile(const Graph& g, const std::vector<ValueInfo>& inputs,
                                                 const SessionOptions& options, Allocator* alloc);

  // Runs the plan. `inputs` is in the order of the `inputs` given to Compile.
  // With `trace`, one event per step and a memory counter after it go to trace->events.
  Status Run(const std::vector<const Tensor*>& inputs, const std::vector<int>& fetch_ids,
             std::vector<Tensor>* results, PlanTrace* trace = nullptr) const;

  int ValueId(const std::string& name) const;
  int64_t arena_bytes() const { return arena_bytes_; }
  // Memory this plan holds of its own: one arena per execution state (one per concurrent run; counted once before
  // the first run makes it) plus the values it folded into constants. The model's initializers, shared by every
  // plan, are not counted.
  int64_t held_bytes() const {
    return arena_bytes_ * std::max<int64_t>(1, states_.load(std::memory_order_relaxed)) + constant_bytes_;
  }
  // Kernel scratch memory (KernelContext::Scratch), shared by the steps: the largest any step asks for, at
  // scratch_offset() in the arena (-1 when not planned).
  int64_t scratch_bytes() const { return scratch_bytes_; }
  int64_t scratch_offset() const { return scratch_offset_; }
  const std::vector<PlanStep>& steps() const { return steps_; }
  const std::vector<PlanValue>& values() const { return values_; }
  std::string Describe() const;

  ~Plan();

 private:
  Plan() = default;
  Status AssignKernels(const SessionOptions& options);
  // Creates the step's kernel for the current value types: the first fast kernel that accepts the node (`*fast`),
  // else the reference kernel.
  Status CreateKernel(PlanStep& step, const SessionOptions& options, bool* fast);
  // bfloat16 activations: a float32 value that only kernels computing in bfloat16 read (ops::Kernel::computes_bf16:
  // --precision bf16, mixed_bfloat16) or kernels that can read it in bfloat16 (ops::Bf16InputKernel), written by
  // a kernel computing in bfloat16 or by one that can write bfloat16
  // (ops::Bf16OutputKernel), is stored in bfloat16, and those kernels are rebuilt for it; where a rebuilt kernel no longer computes in bfloat16 (its fast kernels do not take a bfloat16
  // operand), the values it touches go back to float32. STRATA_BF16_ACTIVATIONS=0 turns it off.
  Status StoreBf16(const SessionOptions& options);
  void ComputeLiveness();
  void PlanMemory(bool enabled);
  std::unique_ptr<ExecState> AcquireState() const;
  Status CheckNumerics(const PlanStep& step, const Tensor& out, const std::string& name, const ExecState& state) const;
  void ReleaseState(std::unique_ptr<ExecState> state) const;
  void TraceStep(const PlanStep& step, const ExecState& state, double t0_us, PlanTrace* trace) const;

  Allocator* alloc_ = nullptr;
  InferredGraph inferred_;
  std::vector<PlanValue> values_;
  std::unordered_map<std::string, int> ids_;
  std::vector<PlanStep> steps_;
  std::vector<int> input_ids_;
  std::vector<Tensor> constants_;  // by value id (undefined for non-constants)
  int64_t arena_bytes_ = 0;
  int64_t constant_bytes_ = 0;
  bool check_numerics_ = false;
  mutable std::atomic<int64_t> states_{0};
  int64_t scratch_bytes_ = 0;
  int64_t scratch_offset_ = -1;
  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<ExecState>> pool_;
  // STRATA_VERBOSE=profile: wall time per step summed over runs (under pool_mu_), printed when the plan goes.
  bool profile_ = false;
  mutable std::vector<double> step_ms_;
  mutable int64_t profiled_runs_ = 0;
};

}  // namespace strata::graph
