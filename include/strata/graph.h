// The strata IR (ONNX operator semantics) and the Session that compiles and runs it.
//
// A Model holds one Graph of Nodes. Values are named by strings, as in ONNX; an empty input name marks an omitted
// optional input. Node op types, attribute names and input/output order follow the ONNX operator spec; training
// helper ops live in the "strata" domain.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/status.h"
#include "strata/tensor.h"

namespace strata::graph {

struct Graph;

// ---- attributes ----

class Attribute {
 public:
  enum class Type { kUndefined, kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kTensors, kGraphs };

  Attribute() = default;
  static Attribute Float(float v);
  static Attribute Int(int64_t v);
  static Attribute String(std::string v);
  static Attribute TensorValue(Tensor v);
  static Attribute GraphValue(std::shared_ptr<Graph> g);
  static Attribute Floats(std::vector<float> v);
  static Attribute Ints(std::vector<int64_t> v);
  static Attribute Strings(std::vector<std::string> v);
  static Attribute Tensors(std::vector<Tensor> v);
  static Attribute Graphs(std::vector<std::shared_ptr<Graph>> v);

  Type type() const { return type_; }
  float f() const { return f_; }
  int64_t i() const { return i_; }
  const std::string& s() const { return s_; }
  const Tensor& t() const { return t_; }
  const std::shared_ptr<Graph>& g() const { return g_; }
  const std::vector<float>& floats() const { return floats_; }
  const std::vector<int64_t>& ints() const { return ints_; }
  const std::vector<std::string>& strings() const { return strings_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<std::shared_ptr<Graph>>& graphs() const { return graphs_; }

 private:
  Type type_ = Type::kUndefined;
  float f_ = 0;
  int64_t i_ = 0;
  std::string s_;
  Tensor t_;
  std::shared_ptr<Graph> g_;
  std::vector<float> floats_;
  std::vector<int64_t> ints_;
  std::vector<std::string> strings_;
  std::vector<Tensor> tensors_;
  std::vector<std::shared_ptr<Graph>> graphs_;
};

std::string_view AttributeTypeName(Attribute::Type t);
using AttributeMap = std::map<std::string, Attribute, std::less<>>;

// ---- nodes ----

inline constexpr std::string_view kOnnxDomain = "";           // "ai.onnx" is normalised to ""
inline constexpr std::string_view kStrataDomain = "strata";    // training helper ops
inline constexpr std::string_view kOnnxMlDomain = "ai.onnx.ml";

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;                // "" = ai.onnx
  std::vector<std::string> inputs;   // "" = omitted optional input
  std::vector<std::string> outputs;  // "" = unused optional output
  AttributeMap attrs;
  int opset = 0;  // version of `domain` that the model imports (set by the importer and the builder)
  std::string doc;

  const Attribute* FindAttr(std::string_view attr_name) const;
  bool HasAttr(std::string_view attr_name) const { return FindAttr(attr_name) != nullptr; }
  // Typed access with defaults; a present attribute of the wrong type gives the default (the verifier reports it).
  int64_t GetInt(std::string_view attr_name, int64_t def) const;
  float GetFloat(std::string_view attr_name, float def) const;
  std::string GetString(std::string_view attr_name, std::string_view def) const;
  std::vector<int64_t> GetInts(std::string_view attr_name, std::vector<int64_t> def = {}) const;
  std::vector<float> GetFloats(std::string_view attr_name, std::vector<float> def = {}) const;
  std::vector<std::string> GetStrings(std::string_view attr_name) const;
  // Required attributes: InvalidArgument naming the node when missing or of another type.
  StatusOr<int64_t> RequireInt(std::string_view attr_name) const;
  StatusOr<float> RequireFloat(std::string_view attr_name) const;
  StatusOr<std::string> RequireString(std::string_view attr_name) const;
  StatusOr<std::vector<int64_t>> RequireInts(std::string_view attr_name) const;
  StatusOr<Tensor> RequireTensor(std::string_view attr_name) const;

  bool has_input(int i) const { return i < static_cast<int>(inputs.size()) && !inputs[i].empty(); }
  bool has_output(int i) const { return i < static_cast<int>(outputs.size()) && !outputs[i].empty(); }
  // "node 'conv1' (Conv)": the prefix of every error about this node.
  std::string Describe() const;
};

// ---- graphs and models ----

struct ValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  PartialShape shape;
  std::string doc;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;   // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  std::map<std::string, Tensor> initializers;
  std::map<std::string, ValueInfo> value_info;  // optional type annotations of intermediate values
  std::string doc;

  const ValueInfo* FindInput(std::string_view n) const;
  const ValueInfo* FindOutput(std::string_view n) const;
};

struct Model {
  Graph graph;
  std::map<std::string, int64_t> opset_imports;  // domain ("" = ai.onnx) -> version
  int64_t ir_version = 8;
  std::string producer_name = "strata";
  std::string producer_version = "0.1.0";
  std::string domain;
  int64_t model_version = 0;
  std::string doc;
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props
  std::string base_dir;  // directory of the .onnx file: external data is resolved (and confined) here

  int64_t OpsetFor(std::string_view domain_name) const;
};

// The values a node's subgraphs (If/Loop/Scan bodies, nested ones included) read from enclosing scopes: names they
// use (as node inputs or as graph outputs) without defining them. These are the node's implicit inputs: they must be
// computed before the node runs and kept alive until it has run. Sorted and unique.
std::vector<std::string> SubgraphOuterInputs(const Node& node);
// The same for one graph: names it uses without defining them.
std::vector<std::string> GraphOuterInputs(const Graph& g);

// Orders nodes so that every node comes after the producers of its inputs. FailedPrecondition on a cycle or on a
// value that nothing produces (names it). `outer_scope` lists names visible from an enclosing graph.
Status TopologicalSort(Graph* graph, const std::vector<std::string>& outer_scope = {});

// Structural checks: unique output names, every input defined, known op types with valid arity, attribute types.
Status VerifyGraph(const Graph& graph, const std::vector<std::string>& outer_scope = {});

// ---- running models ----

// The algorithms the oneDNN convolution kernels may use (`--conv_algorithm`).
enum class ConvAlgorithm {
  kAuto,    // Winograd for the 3x3 stride-1 convolutions where oneDNN 2.6 has it and it measured faster (docs/engine.md)
  kDirect,  // direct convolutions only: their rounding, for users who need it
};
std::string_view ConvAlgorithmName(ConvAlgorithm a);  // "auto", "direct"
// Parses "auto" or "direct"; InvalidArgument naming `where` otherwise.
StatusOr<ConvAlgorithm> ParseConvAlgorithm(std::string_view text, std::string_view where = "conv_algorithm");

// The arithmetic of the heavy inference kernels (`--precision`). Under kBf16 the oneDNN convolution, MatMul and Gemm
// kernels convert their weights to bfloat16 once at plan time and their activations on the way in, multiply in
// bfloat16 with float32 accumulation and write float32, except that a value written by one bfloat16 convolution and
// read only by others (the activations between the convolutions of a CNN) is stored in bfloat16; the model's inputs
// and outputs and every other op stay float32 (docs/engine.md, "bfloat16 inference"). Where the CPU has no native
// bfloat16 kernels (avx512_bf16), fp32 runs instead, with a warning. Inference only (training ignores it).
enum class Precision {
  kFp32,
  kBf16,
};
std::string_view PrecisionName(Precision p);  // "fp32", "bf16"
// Parses "fp32" or "bf16"; InvalidArgument naming `where` otherwise.
StatusOr<Precision> ParsePrecision(std::string_view text, std::string_view where = "precision");

// Type and shape of a model input or output as the model declares it.
struct SignatureEntry {
  std::string name;
  DType dtype = DType::kUndefined;
  PartialShape shape;
};

// Parses an input signature (tf.function's input_signature: shapes fixed up front, the batch dimension free or not):
//   "x:[-1,28,28,1]:float32"   name, shape (-1, ?, None or null = any size), optional dtype
//   "[None,28,28,1]"           no name: the model's only input
//   "x:[-1,4];mask:[-1,4]:bool" several inputs, separated by ';'
//   JSON: {"x": {"shape": [null,28,28,1], "dtype": "float32"}} or [{"name": "x", "shape": [-1,28,28,1]}]
// InvalidArgument naming `where` and the part that is wrong. Entries without a dtype keep the model's.
StatusOr<std::vector<SignatureEntry>> ParseInputSignature(std::string_view text,
                                                          std::string_view where = "input_signature");
// "x:[?,28,28,1]:float32" for each entry, joined by ';' (readable, and accepted by ParseInputSignature).
std::string FormatInputSignature(const std::vector<SignatureEntry>& signature);

// One event of a Chrome trace (the Trace Event Format read by chrome://tracing, Perfetto and TensorBoard's profile
// plugin): a complete event (ph 'X': ts and dur) or a counter (ph 'C': its numeric args are the series).
struct TraceEvent {
  std::string name;
  std::string cat;
  char ph = 'X';
  double ts_us = 0;   // since the profiler was created
  double dur_us = 0;  // 'X' only
  int64_t tid = 0;
  std::vector<std::pair<std::string, std::string>> str_args;
  std::vector<std::pair<std::string, double>> num_args;
};

// Records what Sessions run, step by step, as a Chrome trace: one complete event per executed node (name = node
// name, cat = op type, args: op, kernel, output shapes and bytes, the plan's arena bytes), a "memory" counter after
// each node (bytes the session's allocator holds, arena bytes), one event per Session::Run (cat "strata.run") and
// per plan compiled (cat "strata.compile": a retrace). Attach it with SessionOptions::profiler; it records only while
// started, so an attached idle profiler costs a Run one atomic load. Thread-safe.
class Profiler {
 public:
  Profiler();
  // Records every run from now until Stop().
  void Start();
  void Stop();
  // Records the next `runs` runs of the sessions it is attached to, then stops; `done` (if set) is called once, on
  // the thread that finishes the last of them, after its events are in.
  void StartForRuns(int64_t runs, std::function<void(Profiler&)> done = nullptr);
  bool active() const { return active_.load(std::memory_order_relaxed); }

  // Microseconds since this profiler was created (the events' time base).
  double NowMicros() const;
  // Adds events of the caller's own (a training step's span); the executor adds the per-node ones.
  void Add(std::vector<TraceEvent> events);
  std::vector<TraceEvent> events() const;
  size_t num_events() const;
  void Clear();

  // {"traceEvents": [...], "displayTimeUnit": "ms", ...}: the Trace Event Format's JSON object form.
  std::string ChromeTraceJson() const;
  // Writes ChromeTraceJson to `path`, gzip-compressed when it ends in ".gz".
  Status WriteChromeTrace(const std::string& path) const;
  // Writes <log_dir>/plugins/profile/<run>/<host>.trace.json.gz (the layout TensorBoard's profile plugin reads; run
  // "" = the current UTC time as YYYY_MM_DD_HH_MM_SS) and returns the file's path.
  StatusOr<std::string> WriteTensorBoardTrace(const std::string& log_dir, const std::string& run = "") const;

  // For Session::Run: whether this run is recorded (claims one of StartForRuns's runs), and its end.
  bool BeginRun();
  void EndRun(std::vector<TraceEvent> events);

 private:
  std::atomic<bool> active_{false};
  int64_t origin_ns_ = 0;
  mutable std::mutex mu_;
  std::vector<TraceEvent> events_;
  int64_t runs_left_ = -1;     // -1 = unbounded (Start)
  int64_t runs_pending_ = 0;   // claimed by BeginRun, not yet ended
  std::function<void(Profiler&)> done_;
};

struct SessionOptions {
  int intra_op_threads = 0;       // 0 = leave the process setting alone
  size_t memory_limit_bytes = 0;  // 0 = no limit; over it gives RESOURCE_EXHAUSTED naming node, bytes and limit
  bool optimize = true;           // graph passes (constant folding, fusion)
  bool use_fast_kernels = true;   // false = reference kernels only
  bool plan_memory = true;        // static memory plan (one arena per run state)
  ConvAlgorithm conv_algorithm = ConvAlgorithm::kAuto;
  Precision precision = Precision::kFp32;
  // The plan cache: one compiled plan per distinct set of input shapes, least recently used evicted first. Bounded by
  // count and by the bytes the plans hold of their own (arenas, folded constants; 0 = no bound of that kind). The
  // newest plan always stays. Under memory_limit_bytes, an allocation that fails evicts idle plans and retries once.
  size_t plan_cache_max_plans = 32;
  size_t plan_cache_max_bytes = size_t{1} << 30;
  // After every step, scan its floating-point outputs for NaN and infinity; the first step that produces one fails
  // the run with INVALID_ARGUMENT naming the node, the output and its inputs' ranges (tf.debugging's
  // check_numerics). Costs a pass over every value: a debugging mode.
  bool check_numerics = false;
  // Shapes fixed up front (ParseInputSignature): each entry narrows the model's declared input of that name (dims
  // given here must agree with the model's known ones; Create fails otherwise). A run whose inputs do not fit gets
  // INVALID_ARGUMENT naming the input, the expected and the found shape before any plan is compiled, so no new plan
  // is made for it: the defence against retracing one plan per odd shape.
  std::vector<SignatureEntry> input_signature;
  // Records runs when set and started (Profiler).
  std::shared_ptr<Profiler> profiler;
};

struct RunStats {
  int64_t runs = 0;
  int64_t plan_cache_hits = 0;
  int64_t plan_cache_misses = 0;  // the analogue of a tf.function retrace
  int64_t plan_cache_evictions = 0;
  int64_t plans_cached = 0;      // plans in the cache now
  int64_t plan_cache_bytes = 0;  // bytes they hold (Plan::held_bytes)
};

class Plan;
struct ExecState;
struct PlanTrace;

// Compiles a model into plans (one per distinct set of input shapes, cached) and runs them. Thread-safe: Run may
// be called concurrently; each call uses its own execution state (arena).
class Session {
 public:
  static StatusOr<std::unique_ptr<Session>> Create(std::shared_ptr<const Model> model, SessionOptions options = {});
  ~Session();

  const std::vector<SignatureEntry>& inputs() const { return inputs_; }
  const std::vector<SignatureEntry>& outputs() const { return outputs_; }

  // Runs the model. `feeds` must name every graph input; `fetches` lists outputs to return (empty = all outputs,
  // in graph order). Input dtype/shape mismatches give InvalidArgument naming input, expected and actual.
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
             std::vector<Tensor>* results);
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, std::vector<Tensor>* results) {
    return Run(feeds, {}, results);
  }

  // Planned peak arena bytes (and the kernels chosen) for the given input shapes; compiles the plan if needed.
  StatusOr<int64_t> PlannedPeakBytes(const std::vector<std::pair<std::string, Shape>>& input_shapes);
  // Human-readable plan: one line per step with op, kernel, output shapes.
  StatusOr<std::string> DescribePlan(const std::vector<std::pair<std::string, Shape>>& input_shapes);
  RunStats stats() const;
  const Model& model() const { return *model_; }
  // The graph after optimisation passes (shape independent), as it will be planned.
  const Graph& optimized_graph() const;

  struct Impl;  // implementation detail

 private:
  Session() = default;
  Status ProfiledRun(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
                     const std::vector<std::pair<std::string, Shape>>& ordered, std::vector<Tensor>* results);
  Status RunWithPlan(const std::shared_ptr<Plan>& plan, const std::vector<std::pair<std::string, Tensor>>& feeds,
                     const std::vector<std::string>& fetches, std::vector<Tensor>* results, PlanTrace* trace);
  std::shared_ptr<const Model> model_;
  std::vector<SignatureEntry> inputs_;
  std::vector<SignatureEntry> outputs_;
  std::unique_ptr<Impl> impl_;
};

// Runs a graph node by node with the reference kernels, no passes and no memory planning. Tests compare every
// optimised path against it.
Status RunReference(const Model& model, const std::vector<std::pair<std::string, Tensor>>& feeds,
                    std::vector<Tensor>* results);

}  // namespace strata::graph
