// Optimizers: clipping and one strata update op per variable, appended to the training graph.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "strata/optim.h"

namespace strata::optim {
namespace {

graph::Node& AddNode(graph::Graph* g, std::string op, std::string domain, std::string name,
                     std::vector<std::string> inputs, int num_outputs) {
  graph::Node n;
  n.op_type = std::move(op);
  n.domain = std::move(domain);
  n.opset = n.domain.empty() ? 17 : 1;
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  for (int i = 0; i < num_outputs; ++i) n.outputs.push_back(num_outputs == 1 ? n.name : StrCat(n.name, ":", i));
  g->nodes.push_back(std::move(n));
  return g->nodes.back();
}

std::string Slot(const VariableGrad& v, const std::string& slot) {
  auto it = v.slots.find(slot);
  STRATA_CHECK(it != v.slots.end(), "variable '", v.variable, "' has no slot '", slot, "'");
  return it->second;
}

class SgdOptimizer final : public Optimizer {
 public:
  using Optimizer::Optimizer;
  std::vector<std::string> SlotNames() const override {
    return config().momentum > 0 ? std::vector<std::string>{"momentum"} : std::vector<std::string>{};
  }
  StatusOr<VariableUpdate> EmitOne(graph::Graph* g, const VariableGrad& v, const std::string& grad,
                                   const std::string& scale, const std::string& lr, const std::string&) const override {
    const bool mom = config().momentum > 0;
    graph::Node& n = AddNode(g, "SGDUpdate", "strata", StrCat("optimizer/", v.variable, "/SGDUpdate"),
                             {v.variable, grad, lr, mom ? Slot(v, "momentum") : "", scale}, mom ? 2 : 1);
    n.attrs["momentum"] = graph::Attribute::Float(static_cast<float>(config().momentum));
    n.attrs["nesterov"] = graph::Attribute::Int(config().nesterov ? 1 : 0);
    n.attrs["weight_decay"] = graph::Attribute::Float(static_cast<float>(weight_decay_for(v.variable)));
    while (!n.inputs.empty() && n.inputs.back().empty()) n.inputs.pop_back();
    VariableUpdate u{v.variable, n.outputs[0], {}};
    if (mom) u.new_slots["momentum"] = n.outputs[1];
    return u;
  }
};

class AdamOptimizer final : public Optimizer {
 public:
  using Optimizer::Optimizer;
  std::vector<std::string> SlotNames() const override {
    if (config().amsgrad) return {"m", "v", "vhat"};
    return {"m", "v"};
  }
  StatusOr<VariableUpdate> EmitOne(graph::Graph* g, const VariableGrad& v, const std::string& grad,
                                   const std::string& scale, const std::string& lr,
                                   const std::string& iterations) const override {
    const bool ams = config().amsgrad;
    std::vector<std::string> ins{v.variable, grad, Slot(v, "m"), Slot(v, "v"), lr, iterations, scale};
    if (ams) ins.push_back(Slot(v, "vhat"));
    graph::Node& n = AddNode(g, "AdamUpdate", "strata", StrCat("optimizer/", v.variable, "/AdamUpdate"),
                             std::move(ins), ams ? 4 : 3);
    n.attrs["beta_1"] = graph::Attribute::Float(static_cast<float>(config().beta_1));
    n.attrs["beta_2"] = graph::Attribute::Float(static_cast<float>(config().beta_2));
    n.attrs["epsilon"] = graph::Attribute::Float(static_cast<float>(config().epsilon));
    n.attrs["amsgrad"] = graph::Attribute::Int(ams ? 1 : 0);
    n.attrs["weight_decay"] = graph::Attribute::Float(static_cast<float>(weight_decay_for(v.variable)));
    while (!n.inputs.empty() && n.inputs.back().empty()) n.inputs.pop_back();
    VariableUpdate u{v.variable, n.outputs[0], {{"m", n.outputs[1]}, {"v", n.outputs[2]}}};
    if (ams) u.new_slots["vhat"] = n.outputs[3];
    return u;
  }
};

class RmspropOptimizer final : public Optimizer {
 public:
  using Optimizer::Optimizer;
  std::vector<std::string> SlotNames() const override {
    std::vector<std::string> s{"velocity"};
    if (config().momentum > 0) s.push_back("momentum");
    if (config().centered) s.push_back("average_gradient");
    return s;
  }
  StatusOr<VariableUpdate> EmitOne(graph::Graph* g, const VariableGrad& v, const std::string& grad,
                                   const std::string& scale, const std::string& lr, const std::string&) const override {
    const bool mom = config().momentum > 0, cen = config().centered;
    graph::Node& n = AddNode(g, "RMSpropUpdate", "strata", StrCat("optimizer/", v.variable, "/RMSpropUpdate"),
                             {v.variable, grad, Slot(v, "velocity"), lr, mom ? Slot(v, "momentum") : "",
                              cen ? Slot(v, "average_gradient") : "", scale},
                             4);
    n.attrs["rho"] = graph::Attribute::Float(static_cast<float>(config().rho));
    n.attrs["momentum"] = graph::Attribute::Float(static_cast<float>(config().momentum));
    n.attrs["epsilon"] = graph::Attribute::Float(static_cast<float>(config().epsilon));
    n.attrs["centered"] = graph::Attribute::Int(cen ? 1 : 0);
    n.attrs["weight_decay"] = graph::Attribute::Float(static_cast<float>(weight_decay_for(v.variable)));
    if (!mom) n.outputs[2].clear();
    if (!cen) n.outputs[3].clear();
    while (!n.inputs.empty() && n.inputs.back().empty()) n.inputs.pop_back();
    VariableUpdate u{v.variable, n.outputs[0], {{"velocity", n.outputs[1]}}};
    if (mom) u.new_slots["momentum"] = n.outputs[2];
    if (cen) u.new_slots["average_gradient"] = n.outputs[3];
    return u;
  }
};

Status CheckConfig(const std::string& name, const OptimizerConfig& c) {
  const ClipOptions& k = c.clip;
  if (k.clipnorm && k.global_clipnorm)
    return InvalidArgumentError("optimizer ", name, ": set at most one of clipnorm and global_clipnorm");
  for (auto v : {k.clipnorm, k.global_clipnorm, k.clipvalue})
    if (v && !(*v > 0)) return InvalidArgumentError("optimizer ", name, ": clipping limits must be positive, got ", *v);
  for (const auto& [prefix, v] : k.group_clipnorm)
    if (!(v > 0)) return InvalidArgumentError("optimizer ", name, ": group clip norm for '", prefix, "' must be positive");
  if (c.momentum < 0 || c.momentum > 1) return InvalidArgumentError("optimizer ", name, ": momentum must be in [0, 1]");
  if (!(c.beta_1 >= 0 && c.beta_1 < 1) || !(c.beta_2 >= 0 && c.beta_2 < 1))
    return InvalidArgumentError("optimizer ", name, ": beta_1 and beta_2 must be in [0, 1)");
  for (const auto& [prefix, m] : c.lr_multipliers)
    if (!(m >= 0) || !std::isfinite(m))
      return InvalidArgumentError("optimizer ", name, ": the learning-rate multiplier of '", prefix,
                                  "' must be a finite number >= 0, got ", m);
  if (c.weight_decay && *c.weight_decay < 0) return InvalidArgumentError("optimizer ", name, ": weight_decay must be >= 0");
  return Status::OK();
}

}  // namespace

Optimizer::Optimizer(std::string name, OptimizerConfig config) : name_(std::move(name)), config_(std::move(config)) {
  if (!config_.learning_rate) config_.learning_rate = ConstantLR(name_ == "sgd" ? 0.01 : 0.001);
  if (!config_.weight_decay && name_ == "adamw") config_.weight_decay = 0.004;
}

double Optimizer::weight_decay_for(const std::string& variable) const {
  if (!config_.weight_decay) return 0.0;
  for (const std::string& s : config_.exclude_from_weight_decay)
    if (variable.find(s) != std::string::npos) return 0.0;
  return *config_.weight_decay;
}

double Optimizer::lr_multiplier_for(const std::string& variable) const {
  for (const auto& [prefix, m] : config_.lr_multipliers)
    if (variable.rfind(prefix, 0) == 0) return m;
  return 1.0;
}

Status Optimizer::EmitUpdates(graph::Graph* g, const std::vector<VariableGrad>& vars, const std::string& lr,
                              const std::string& iterations, std::vector<VariableUpdate>* updates,
                              std::string* grad_norm) const {
  const ClipOptions& clip = config_.clip;
  std::vector<std::string> grads;
  for (const VariableGrad& v : vars) {
    std::string grad = v.grad;
    if (clip.clipvalue) {
      const std::string lo = StrCat("optimizer/", v.variable, "/clip_min"), hi = StrCat("optimizer/", v.variable, "/clip_max");
      g->initializers[lo] = Tensor::Scalar<float>(static_cast<float>(-*clip.clipvalue));
      g->initializers[hi] = Tensor::Scalar<float>(static_cast<float>(*clip.clipvalue));
      grad = AddNode(g, "Clip", "", StrCat("optimizer/", v.variable, "/Clip"), {grad, lo, hi}, 1).outputs[0];
    }
    grads.push_back(grad);
  }
  // Clip scale per variable: group norms first, then the global or per-variable norm.
  std::vector<std::string> scale(vars.size());
  std::vector<bool> grouped(vars.size(), false);
  auto norm_node = [&](const std::string& name, const std::vector<size_t>& members, double limit) {
    std::vector<std::string> ins;
    for (size_t i : members) ins.push_back(grads[i]);
    graph::Node& n = AddNode(g, "GlobalNorm", "strata", name, std::move(ins), 2);
    n.attrs["clip_norm"] = graph::Attribute::Float(static_cast<float>(limit));
    return std::make_pair(n.outputs[0], n.outputs[1]);
  };
  for (size_t gi = 0; gi < clip.group_clipnorm.size(); ++gi) {
    std::vector<size_t> members;
    for (size_t i = 0; i < vars.size(); ++i)
      if (!grouped[i] && vars[i].variable.rfind(clip.group_clipnorm[gi].first, 0) == 0) members.push_back(i);
    if (members.empty()) continue;
    auto [norm, s] = norm_node(StrCat("optimizer/group_", gi, "/GlobalNorm"), members, clip.group_clipnorm[gi].second);
    for (size_t i : members) scale[i] = s, grouped[i] = true;
  }
  std::vector<size_t> rest, all;
  for (size_t i = 0; i < vars.size(); ++i) {
    all.push_back(i);
    if (!grouped[i]) rest.push_back(i);
  }
  if (clip.global_clipnorm && !rest.empty()) {
    auto [norm, s] = norm_node("optimizer/GlobalNorm", rest, *clip.global_clipnorm);
    for (size_t i : rest) scale[i] = s;
    if (grad_norm && rest.size() == vars.size()) *grad_norm = norm;
  } else if (clip.clipnorm) {
    for (size_t i : rest) scale[i] = norm_node(StrCat("optimizer/", vars[i].variable, "/Norm"), {i}, *clip.clipnorm).second;
  }
  if (grad_norm && grad_norm->empty() && !vars.empty()) *grad_norm = norm_node("optimizer/GradNorm", all, 0).first;
  updates->clear();
  // One scaled learning rate per distinct multiplier (lr * m, a scalar Mul).
  std::map<double, std::string> scaled_lr;
  for (size_t i = 0; i < vars.size(); ++i) {
    const double m = lr_multiplier_for(vars[i].variable);
    std::string var_lr = lr;
    if (m != 1.0) {
      auto [it, fresh] = scaled_lr.emplace(m, "");
      if (fresh) {
        const std::string k = StrCat("optimizer/lr_multiplier_", scaled_lr.size() - 1);
        g->initializers[k] = Tensor::Scalar<float>(static_cast<float>(m));
        it->second = AddNode(g, "Mul", "", StrCat(k, "/lr"), {lr, k}, 1).outputs[0];
      }
      var_lr = it->second;
    }
    StatusOr<VariableUpdate> u = EmitOne(g, vars[i], grads[i], scale[i], var_lr, iterations);
    if (!u.ok())
      return Status(u.status()).WithContext(StrCat("optimizer '", name_, "', variable '", vars[i].variable, "'"));
    updates->push_back(std::move(*u));
  }
  return Status::OK();
}

std::unique_ptr<Optimizer> SGD(OptimizerConfig config) { return std::make_unique<SgdOptimizer>("sgd", std::move(config)); }
std::unique_ptr<Optimizer> Adam(OptimizerConfig config) { return std::make_unique<AdamOptimizer>("adam", std::move(config)); }
std::unique_ptr<Optimizer> AdamW(OptimizerConfig config) {
  return std::make_unique<AdamOptimizer>("adamw", std::move(config));
}
std::unique_ptr<Optimizer> RMSprop(OptimizerConfig config) {
  return std::make_unique<RmspropOptimizer>("rmsprop", std::move(config));
}

Status Optimizer::Validate() const { return CheckConfig(name_, config_); }

StatusOr<VariableUpdate> Optimizer::BuildUpdate(graph::Builder&, const UpdateInputs& in) const {
  return UnimplementedError("optimizer '", name_, "' defines no update rule: override BuildUpdate (or EmitOne)");
}

StatusOr<VariableUpdate> Optimizer::EmitOne(graph::Graph* g, const VariableGrad& v, const std::string& grad,
                                            const std::string& grad_scale, const std::string& lr,
                                            const std::string& iterations) const {
  graph::Builder b(g, StrCat("optimizer/", v.variable, "/update"));
  UpdateInputs in{v.variable, v.variable, grad, v.slots, lr, iterations};
  if (!grad_scale.empty()) in.grad = b.Emit1("Mul", {grad, grad_scale});
  if (const double wd = weight_decay_for(v.variable); wd > 0) {
    const std::string decay = b.Emit1("Mul", {b.Emit1("Mul", {v.variable, lr}), b.Scalar(static_cast<float>(wd))});
    in.value = b.Emit1("Sub", {v.variable, decay});
  }
  STRATA_ASSIGN_OR_RETURN(VariableUpdate u, BuildUpdate(b, in));
  u.variable = v.variable;
  if (u.new_value.empty()) return InvalidArgumentError("the update rule gave no new value for the variable");
  std::vector<std::string> missing, unexpected;
  for (const std::string& slot : SlotNames())
    if (!u.new_slots.count(slot) || u.new_slots.at(slot).empty()) missing.push_back(slot);
  for (const auto& [slot, value] : u.new_slots)
    if (!v.slots.count(slot)) unexpected.push_back(slot);
  if (!missing.empty() || !unexpected.empty())
    return InvalidArgumentError("the update rule must give a new value for every slot of SlotNames() ",
                                SlotNames(), "; missing ", missing, ", not slots ", unexpected);
  return u;
}

StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(std::string_view name, OptimizerConfig config) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  STRATA_RETURN_IF_ERROR(CheckConfig(n, config));
  if (n == "sgd") return SGD(std::move(config));
  if (n == "adam") return Adam(std::move(config));
  if (n == "adamw") return AdamW(std::move(config));
  if (n == "rmsprop") return RMSprop(std::move(config));
  return InvalidArgumentError("unknown optimizer '", name, "'; expected sgd, adam, adamw or rmsprop");
}

}  // namespace strata::optim
