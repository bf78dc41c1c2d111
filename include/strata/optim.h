// optim: Keras optimizers as update ops inside the training graph, learning-rate schedules and gradient clipping.
//
// An Optimizer appends, for every trainable variable, its update: for the built-in ones one strata-domain update op
// (strata.SGDUpdate, AdamUpdate, RMSpropUpdate), for a user subclass the nodes its BuildUpdate emits. The update
// reads the variable, its gradient, its slots, the learning rate and the step counter and produces the new variable
// and slots. The learning rate and the step counter are graph inputs fed every step, so a
// schedule (evaluated on the host at the current `iterations`, before the increment, as Keras does), a
// ReduceLROnPlateau or a LearningRateScheduler never recompiles the plan. Clipping (per variable, global, or
// per-group global norms chosen by variable-name prefix) is a strata.GlobalNorm node whose `scale` output every
// update op of the group multiplies its gradient by: no copy of the gradients.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/graph.h"
#include "strata/graph_builder.h"
#include "strata/status.h"

namespace strata::optim {

// ---- learning-rate schedules (specs/tf-formats.md §6.4) ----

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The learning rate at `step` = the optimizer's iterations before this step's increment.
  virtual double operator()(int64_t step) const = 0;
  // "cosine(initial=0.001, decay_steps=2814, alpha=0, warmup_target=..., warmup_steps=...)".
  virtual std::string Describe() const = 0;
};
using Schedule = std::shared_ptr<const LearningRateSchedule>;

Schedule ConstantLR(double learning_rate);
// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i], then the last.
StatusOr<Schedule> PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values);
// initial * rate^(step / decay_steps) (floored exponent with staircase).
StatusOr<Schedule> ExponentialDecay(double initial, int64_t decay_steps, double decay_rate, bool staircase = false);
// initial / (1 + rate * step / decay_steps) (floored quotient with staircase).
StatusOr<Schedule> InverseTimeDecay(double initial, int64_t decay_steps, double decay_rate, bool staircase = false);
// (initial - end) * (1 - min(step, decay_steps)/decay_steps)^power + end; `cycle` restarts the decay.
StatusOr<Schedule> PolynomialDecay(double initial, int64_t decay_steps, double end = 0.0001, double power = 1.0,
                                   bool cycle = false);
// Cosine decay with optional linear warmup from `initial` to `warmup_target` over warmup_steps (Keras CosineDecay).
StatusOr<Schedule> CosineDecay(double initial, int64_t decay_steps, double alpha = 0.0,
                               std::optional<double> warmup_target = std::nullopt, int64_t warmup_steps = 0);

// ---- clipping ----

struct ClipOptions {
  std::optional<double> clipnorm;         // each gradient to its own norm
  std::optional<double> global_clipnorm;  // all gradients by their global norm
  std::optional<double> clipvalue;        // each element to [-v, v]
  // Global norm per group of variables chosen by name prefix, e.g. {{"backbone/", 1.0}, {"head/", 5.0}}: the first
  // matching prefix wins; unmatched variables fall back to clipnorm/global_clipnorm.
  std::vector<std::pair<std::string, double>> group_clipnorm;
};

// ---- optimizers ----

struct OptimizerConfig {
  Schedule learning_rate;  // null: the optimizer's default (SGD 0.01, others 0.001)
  std::optional<double> weight_decay;  // decoupled, applied before the update; AdamW defaults to 0.004
  std::vector<std::string> exclude_from_weight_decay;  // variables whose name contains one of these get none
  ClipOptions clip;
  // Learning-rate multipliers per variable, chosen by name prefix ({"conv2d", 0.1}, {"dense_2/", 10}): a variable's
  // update uses lr times the multiplier of the first matching prefix (1 without one). Multipliers must be >= 0.
  std::vector<std::pair<std::string, double>> lr_multipliers;
  double momentum = 0.0;  // SGD, RMSprop
  bool nesterov = false;  // SGD
  double beta_1 = 0.9, beta_2 = 0.999;  // Adam
  double epsilon = 1e-7;                // Adam, RMSprop
  bool amsgrad = false;                 // Adam
  double rho = 0.9;                     // RMSprop
  bool centered = false;                // RMSprop
};

// One trainable variable in the training graph: its value, its gradient and its slots (slot name -> IR value).
struct VariableGrad {
  std::string variable;
  std::string grad;
  std::map<std::string, std::string> slots;
};
// What the update produced for it.
struct VariableUpdate {
  std::string variable;
  std::string new_value;
  std::map<std::string, std::string> new_slots;
};

// What an update rule reads for one variable: IR value names in the training graph.
struct UpdateInputs {
  std::string variable_name;  // the weight, "dense/kernel"
  std::string value;          // its current value (after decoupled weight decay, when configured)
  std::string grad;           // its gradient (after clipping, when configured), the variable's dtype and shape
  std::map<std::string, std::string> slots;  // slot name (SlotNames()) -> current value
  std::string lr;          // float32 scalar: the schedule's learning rate times the variable's lr multiplier
  std::string iterations;  // int64 scalar: the step counter before this step's increment
};

// The base of every optimizer: the built-in ones (SGD, Adam, AdamW, RMSprop) and user subclasses, which the trainer
// takes as instances (train::CompileOptions::optimizer). A subclass names its slots and emits its update rule as
// graph nodes; clipping, learning-rate schedules and multipliers, decoupled weight decay, slot state, checkpoints and
// loss scaling come from this class and the trainer.
//
//   class SignSgd : public optim::Optimizer {
//    public:
//     SignSgd() : Optimizer("sign_sgd", {.learning_rate = optim::ConstantLR(0.01)}) {}
//     std::vector<std::string> SlotNames() const override { return {}; }
//     StatusOr<VariableUpdate> BuildUpdate(graph::Builder& b, const UpdateInputs& in) const override {
//       std::string step = b.Emit1("Mul", {b.Emit1("Sign", {in.grad}), in.lr});
//       return VariableUpdate{in.variable_name, b.Emit1("Sub", {in.value, step}), {}};
//     }
//   };
class Optimizer {
 public:
  // `name` identifies the optimizer in messages ("sgd", "adam", ... for the built-in ones). Without a learning rate
  // in `config`, SGD's default is 0.01 and every other optimizer's 0.001 (Keras's).
  Optimizer(std::string name, OptimizerConfig config);
  virtual ~Optimizer() = default;

  const std::string& name() const { return name_; }
  const OptimizerConfig& config() const { return config_; }
  const Schedule& learning_rate() const { return config_.learning_rate; }
  void set_learning_rate(Schedule s) { config_.learning_rate = std::move(s); }
  double weight_decay_for(const std::string& variable) const;
  // The learning-rate multiplier of a variable (config().lr_multipliers; 1 when no prefix matches).
  double lr_multiplier_for(const std::string& variable) const;
  // Checks the config's ranges (clipping limits, momentum, betas, multipliers, weight decay): InvalidArgument naming
  // the optimizer and the value. The trainer calls it on every optimizer it is given.
  Status Validate() const;

  // Slot names of one variable ("momentum"; "m", "v"; ...); each slot has the variable's shape and starts at zero.
  virtual std::vector<std::string> SlotNames() const = 0;

  // Appends clipping and one update per variable to `g`. `lr` (float32 scalar) and `iterations` (int64 scalar)
  // name graph values. `grad_norm`, when not null, receives the IR value of the global gradient norm (before
  // clipping) for logging.
  Status EmitUpdates(graph::Graph* g, const std::vector<VariableGrad>& vars, const std::string& lr,
                     const std::string& iterations, std::vector<VariableUpdate>* updates,
                     std::string* grad_norm = nullptr) const;

 protected:
  // The update rule of a subclass: emits, with `b`, the new value of the variable and of every slot in SlotNames()
  // (VariableUpdate::new_slots keyed by slot name); in.grad is already clipped and in.value already decayed. The
  // default is Unimplemented: a subclass overrides this, or EmitOne.
  virtual StatusOr<VariableUpdate> BuildUpdate(graph::Builder& b, const UpdateInputs& in) const;

  // The lower-level hook the built-in optimizers override (one fused strata update op per variable): emits the update
  // of one variable whose gradient is `grad` and whose clip scale is `grad_scale` ("" = none); weight decay is the
  // override's job. The default applies the clip scale and the decoupled weight decay (value -= lr * wd * value,
  // Keras's order), calls BuildUpdate and checks that it produced every slot.
  virtual StatusOr<VariableUpdate> EmitOne(graph::Graph* g, const VariableGrad& v, const std::string& grad,
                                           const std::string& grad_scale, const std::string& lr,
                                           const std::string& iterations) const;

 private:
  std::string name_;
  OptimizerConfig config_;
};

std::unique_ptr<Optimizer> SGD(OptimizerConfig config = {});
std::unique_ptr<Optimizer> Adam(OptimizerConfig config = {});
std::unique_ptr<Optimizer> AdamW(OptimizerConfig config = {});
std::unique_ptr<Optimizer> RMSprop(OptimizerConfig config = {});
// By Keras name: "sgd", "adam", "adamw", "rmsprop" (case-insensitive); checks the config's ranges.
StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(std::string_view name, OptimizerConfig config = {});

}  // namespace strata::optim
