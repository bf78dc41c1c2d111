// strata bench MODEL.onnx [--batch N] [--input NAME=FILE.npy] [--threads N] [--warmup W] [--iters K] [--json]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/alloc_counter.h"
#include "cli/commands.h"
#include "cli/model_util.h"
#include "core/parallel.h"
#include "io/npy.h"

namespace strata::cli {
namespace {

// User + system CPU time of this process so far, all threads (getrusage).
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct BenchArgs {
  std::string model;
  int64_t batch = 1;
  int warmup = 5;
  int iters = 20;
  bool json = false;
  std::vector<std::string> shapes;
  std::vector<std::string> inputs;  // NAME=FILE.npy: fixed data (and shape) for that input instead of random
  std::string input_signature;
  std::string profile;  // a Chrome trace of one more run after the timed ones
};

Status Bench(const BenchArgs& args) {
  if (args.batch < 1) return InvalidArgumentError("--batch must be >= 1, got ", args.batch);
  if (args.iters < 1) return InvalidArgumentError("--iters must be >= 1, got ", args.iters);
  auto profiler = args.profile.empty() ? nullptr : std::make_shared<graph::Profiler>();
  STRATA_ASSIGN_OR_RETURN(LoadedModel lm, LoadModelSession(args.model, Globals().threads, 0, Globals().conv_algorithm,
                                                           Globals().precision, args.input_signature, profiler));
  std::map<std::string, std::vector<int64_t>> overrides;
  for (const std::string& spec : args.shapes) {
    STRATA_ASSIGN_OR_RETURN(auto kv, SplitAssignment(spec, "--shape"));
    STRATA_ASSIGN_OR_RETURN(overrides[kv.first], ParseDims(kv.second, "--shape " + kv.first));
  }
  std::map<std::string, Tensor> given;
  for (const std::string& spec : args.inputs) {
    STRATA_ASSIGN_OR_RETURN(auto kv, SplitAssignment(spec, "--input"));
    bool known = false;
    for (const auto& in : lm.session->inputs()) known = known || in.name == kv.first;
    if (!known) return InvalidArgumentError("--input ", kv.first, ": the model has no input of that name");
    STRATA_ASSIGN_OR_RETURN(Tensor t, io::ReadNpy(kv.second));
    overrides[kv.first].assign(t.shape().dims().begin(), t.shape().dims().end());
    given.emplace(kv.first, std::move(t));
  }
  STRATA_ASSIGN_OR_RETURN(auto shapes, ResolveInputShapes(lm.session->inputs(), args.batch, overrides));
  std::vector<std::pair<std::string, Tensor>> feeds;
  uint64_t seed = 1;
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto it = given.find(shapes[i].first);
    if (it != given.end()) {
      feeds.emplace_back(shapes[i].first, std::move(it->second));
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(Tensor t, RandomInput(lm.session->inputs()[i].dtype, shapes[i].second, seed++));
    feeds.emplace_back(shapes[i].first, std::move(t));
  }
  std::vector<Tensor> outputs;
  const auto t_plan = std::chrono::steady_clock::now();
  STRATA_RETURN_IF_ERROR(lm.session->Run(feeds, &outputs));  // compiles the plan
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_plan).count();
  for (int i = 1; i < args.warmup; ++i) STRATA_RETURN_IF_ERROR(lm.session->Run(feeds, &outputs));
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(args.iters));  // the timing itself must not count as an allocation per run
  const int64_t allocs_before = HeapAllocationCount();
  const double cpu_before = ProcessCpuSeconds();
  for (int i = 0; i < args.iters; ++i) {
    outputs.clear();
    const auto t0 = std::chrono::steady_clock::now();
    STRATA_RETURN_IF_ERROR(lm.session->Run(feeds, &outputs));
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  // Process CPU time (every thread, spin-waits included) per timed run: what a server pays per model run.
  const double cpu_us_per_run = 1e6 * (ProcessCpuSeconds() - cpu_before) / args.iters;
  const bool counted = allocs_before >= 0;
  const double allocs_per_run = static_cast<double>(HeapAllocationCount() - allocs_before) / args.iters;
  if (profiler) {  // one more run, untimed, recorded (the timed runs pay no profiling cost)
    profiler->StartForRuns(1);
    STRATA_RETURN_IF_ERROR(lm.session->Run(feeds, &outputs));
    STRATA_RETURN_IF_ERROR(WriteProfile(*profiler, args.profile));
  }
  const std::string allocs_text = counted ? StrCat(allocs_per_run) : "not counted in this (sanitizer) build";
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) {
    return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * (sorted.size() - 1) + 0.5))];
  };
  const double median = pct(0.5);
  const double throughput = 1000.0 * static_cast<double>(args.batch) / median;
  STRATA_ASSIGN_OR_RETURN(int64_t peak, lm.session->PlannedPeakBytes(shapes));
  const graph::RunStats st = lm.session->stats();
  std::string shape_text;
  for (const auto& [name, s] : shapes) shape_text += StrCat(shape_text.empty() ? "" : " ", name, "=", s.ToString());
  if (args.json) {
    std::printf(
        "{\"model\": \"%s\", \"batch\": %lld, \"threads\": %d, \"iters\": %d, \"first_run_ms\": %.3f, \"min_ms\": "
        "%.4f, "
        "\"median_ms\": %.4f, \"p90_ms\": %.4f, \"throughput_per_s\": %.2f, \"planned_peak_bytes\": %lld, "
        "\"plan_cache_misses\": %lld, \"heap_allocations_per_run\": %s, \"cpu_us_per_run\": %.2f}\n",
        args.model.c_str(), static_cast<long long>(args.batch), IntraOpThreads(), args.iters, first_ms, sorted.front(),
        median, pct(0.9), throughput, static_cast<long long>(peak), static_cast<long long>(st.plan_cache_misses),
        counted ? StrCat(allocs_per_run).c_str() : "null", cpu_us_per_run);
  } else {
    std::printf("model:       %s\ninputs:      %s\nthreads:     %d\n", args.model.c_str(), shape_text.c_str(),
                IntraOpThreads());
    std::printf("first run:   %.3f ms (includes planning)\n", first_ms);
    std::printf("latency:     min %.3f ms, median %.3f ms, p90 %.3f ms over %d runs\n", sorted.front(), median,
                pct(0.9), args.iters);
    std::printf("throughput:  %.1f examples/s (batch %lld)\n", throughput, static_cast<long long>(args.batch));
    std::printf("cpu time:    %.1f us per run (process, all threads)\n", cpu_us_per_run);
    std::printf("memory:      planned peak %.2f MiB of intermediates; heap allocations per run: %s\n",
                static_cast<double>(peak) / (1 << 20), allocs_text.c_str());
    std::printf("plan cache:  %lld misses, %lld hits\n", static_cast<long long>(st.plan_cache_misses),
                static_cast<long long>(st.plan_cache_hits));
  }
  return Status::OK();
}

}  // namespace

void AddBenchCommand(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "Time an ONNX model on random inputs of its signature's shape");
  cmd->add_option("model", args->model, "The .onnx file, or a SavedModel directory (its serving_default signature)")
      ->required();
  cmd->add_option("--batch", args->batch, "Batch size for the leading unknown dimension (default 1)");
  cmd->add_option("--shape", args->shapes, "NAME=D0,D1,... fixes an input's shape (repeatable)");
  cmd->add_option("--input", args->inputs,
                  "NAME=FILE.npy feeds that file (its shape wins) instead of random data (repeatable)");
  cmd->add_option("--threads", Globals().threads, "Intra-op threads (default: one per core)");
  AddConvAlgorithmOption(cmd, &Globals().conv_algorithm);
  AddPrecisionOption(cmd, &Globals().precision);
  cmd->add_option("--warmup", args->warmup, "Untimed runs first (default 5)");
  cmd->add_option("--iters", args->iters, "Timed runs (default 20)");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  AddSignatureAndProfileOptions(cmd, &args->input_signature, &args->profile);
  cmd->callback([args] {
    Status s = Bench(*args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
