// `strata train-bench --model_name mlp|cnn_small|resnet18|resnet50 --batch_size 64 [--input_shape H W C]
// [--mixed_precision bf16]`: training
// throughput measured like the PyTorch
// peer's bench_train.py (../shared/peers/torch): SGD(lr 0.01, momentum 0.9) + cross-entropy on one fixed random
// batch (uniform [0,1) inputs, random labels), 3 warm-up steps, then >= 10 timed steps (about 5 s); images/s =
// batch / median step time. `foreign` is the CPU share of the machine other processes used meanwhile (/proc/stat),
// as the peer reports it; `cpu_ms_per_step` is this process's own CPU time (user + system, /proc/self/stat) per timed
// step, a measure of the work that a loaded machine disturbs less than the wall time. `--steps N [--warmup_steps W]`
// times exactly N steps after W warm-up steps instead (for models whose step takes seconds:
// bench/train/zoo_training.sh). Prints one JSON line.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "cli/train_common.h"
#include "core/parallel.h"
#include "core/random.h"
#include "strata/train.h"

namespace strata::cli {
namespace {

struct BenchArgs {
  std::string model_name = "mlp";
  int64_t batch_size = 64;
  int threads = 2;
  std::string optimizer = "sgd";
  double min_seconds = 5.0;
  int steps = 0;         // 0: as many as --min_seconds asks (10..300)
  int warmup_steps = 4;  // the first step, compilation included, is one of them
  std::vector<int64_t> input_shape = {28, 28, 1};
  int64_t num_classes = 10;
  graph::ConvAlgorithm conv_algorithm = graph::ConvAlgorithm::kAuto;
  std::string mixed_precision = "none";
  std::string loss_scale = "auto";
};

// Busy jiffies of the whole machine and of this process.
std::pair<int64_t, int64_t> Jiffies() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  int64_t v[10] = {};
  stat >> cpu;
  for (int i = 0; i < 8; ++i) stat >> v[i];
  int64_t busy = 0;
  for (int i = 0; i < 8; ++i) busy += v[i];
  busy -= v[3] + v[4];
  std::ifstream self("/proc/self/stat");
  std::string s((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  std::string rest = s.substr(s.rfind(')') + 2);
  std::vector<std::string> f;
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t e = rest.find(' ', pos);
    if (e == std::string::npos) e = rest.size();
    f.push_back(rest.substr(pos, e - pos));
    pos = e + 1;
  }
  const int64_t own = f.size() > 12 ? std::stoll(f[11]) + std::stoll(f[12]) : 0;
  return {busy, own};
}

Status RunBench(const BenchArgs& a) {
  if (a.steps < 0) return InvalidArgumentError("--steps must be 0 (timed by --min_seconds) or positive, got ", a.steps);
  if (a.warmup_steps < 1)
    return InvalidArgumentError("--warmup_steps must be at least 1 (the first step compiles the plan), got ",
                                a.warmup_steps);
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  SetIntraOpThreads(a.threads);
  STRATA_ASSIGN_OR_RETURN(auto model, nn::ZooModel(a.model_name, a.input_shape, a.num_classes));
  train::CompileOptions c;
  c.loss["logits"] = nn::Loss::SparseCategoricalCrossentropy(true);
  c.optimizer = a.optimizer;
  c.optimizer_config.learning_rate = optim::ConstantLR(0.01);
  c.optimizer_config.momentum = a.optimizer == "sgd" ? 0.9 : 0.0;
  train::TrainerOptions to;
  to.intra_op_threads = a.threads;
  to.conv_algorithm = a.conv_algorithm;
  STRATA_ASSIGN_OR_RETURN(to.mixed_precision, nn::ParseDTypePolicy(a.mixed_precision, "--mixed_precision"));
  STRATA_ASSIGN_OR_RETURN(to.loss_scale.mode, train::ParseLossScaleMode(a.loss_scale, "--loss_scale"));
  STRATA_ASSIGN_OR_RETURN(auto trainer, train::Trainer::Create(model.get(), c, to));
  Rng rng(1234);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{a.batch_size, a.input_shape[0], a.input_shape[1], a.input_shape[2]});
  for (float& v : x.mutable_values<float>()) v = rng.Uniform();
  Tensor y = Tensor::Empty(DType::kInt64, Shape{a.batch_size});
  for (int64_t& v : y.mutable_values<int64_t>()) v = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(a.num_classes)));
  data::Element batch;
  batch.Set("input_image", x);
  batch.Set("label", y);
  using Clock = std::chrono::steady_clock;
  auto step = [&]() -> StatusOr<double> {
    const auto t0 = Clock::now();
    STRATA_RETURN_IF_ERROR(trainer->TrainOnBatch(batch).status());
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  STRATA_ASSIGN_OR_RETURN(double first, step());
  double est = first;
  for (int i = 1; i < a.warmup_steps; ++i) {
    STRATA_ASSIGN_OR_RETURN(est, step());
  }
  const int steps = a.steps > 0 ? a.steps
                                : std::max(10, std::min(300, static_cast<int>(a.min_seconds / std::max(est, 1e-6))));
  std::vector<double> times;
  const auto [busy0, own0] = Jiffies();
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) {
    STRATA_ASSIGN_OR_RETURN(double t, step());
    times.push_back(t);
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto [busy1, own1] = Jiffies();
  const double foreign = std::max(0.0, double((busy1 - busy0) - (own1 - own0)) /
                                           (double(sysconf(_SC_CLK_TCK)) * wall * double(sysconf(_SC_NPROCESSORS_ONLN))));
  std::sort(times.begin(), times.end());
  const double med = times[times.size() / 2];
  const double p10 = times[times.size() / 10], p90 = times[times.size() * 9 / 10];
  double mean = 0;
  for (double t : times) mean += t;
  mean /= static_cast<double>(times.size());
  const graph::RunStats rs = trainer->train_stats();
  std::printf(
      "{\"model\": \"%s\", \"mixed_precision\": \"%s\", \"batch\": %lld, \"threads\": %d, \"warmup_steps\": %d, \"steps\": %d, \"first_step_s\": %.3f, "
      "\"median_step_ms\": %.3f, \"min_step_ms\": %.3f, \"p10_step_ms\": %.3f, \"p90_step_ms\": %.3f, "
      "\"mean_step_ms\": %.3f, \"images_per_s\": %.1f, \"images_per_s_best\": %.1f, "
      "\"foreign_pct\": %.0f, \"cpu_ms_per_step\": %.0f, \"plan_compilations\": %lld, \"params\": %lld}\n",
      a.model_name.c_str(), std::string(nn::DTypePolicyName(to.mixed_precision)).c_str(), (long long)a.batch_size, a.threads, a.warmup_steps, steps, first, med * 1e3, times[0] * 1e3,
      p10 * 1e3, p90 * 1e3, mean * 1e3,
      double(a.batch_size) / med, double(a.batch_size) / times[0], 100 * foreign,
      1e3 * double(own1 - own0) / double(sysconf(_SC_CLK_TCK)) / steps, (long long)rs.plan_cache_misses,
      (long long)model->CountParams());
  return Status::OK();
}

}  // namespace

void AddTrainBenchCommand(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("train-bench", "Training images/s on a fixed random batch (like the PyTorch peer)");
  cmd->add_option("--model_name", args->model_name, "Zoo model: mlp, cnn_small, cnn_small_same, resnet18, resnet50");
  cmd->add_option("--input_shape", args->input_shape, "H W C of one example (default 28 28 1)")->expected(3);
  cmd->add_option("--num_classes", args->num_classes, "Number of classes (default 10)");
  cmd->add_option("--batch_size", args->batch_size, "Batch size");
  cmd->add_option("--intra_op_threads", args->threads, "Intra-op threads");
  cmd->add_option("--optimizer", args->optimizer, "sgd (momentum 0.9, as the peer), adam, ...");
  cmd->add_option("--min_seconds", args->min_seconds, "Time the timed steps should take");
  cmd->add_option("--steps", args->steps, "Time exactly this many steps (default 0: as --min_seconds asks)");
  cmd->add_option("--warmup_steps", args->warmup_steps, "Untimed steps first, the compiling one included (default 4)");
  AddConvAlgorithmOption(cmd, &args->conv_algorithm);
  cmd->add_option("--mixed_precision", args->mixed_precision, "none, bf16 or fp16 (as strata train)");
  cmd->add_option("--loss_scale", args->loss_scale, "auto, dynamic or off (as strata train)");
  cmd->callback([args] {
    Status s = RunBench(*args);
    if (!s.ok()) ReportError(s);
  });
}

}  // namespace strata::cli
