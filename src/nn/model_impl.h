// Model internals shared by model.cc and summary.cc.
#pragma once

#include <map>
#include <set>
#include <unordered_map>

#include "graph/infer.h"
#include "nn/internal.h"

namespace strata::nn {

inline constexpr int kOnnxOpset = 17;

// The CallContext that appends a layer's nodes to a graph.
class Emitter final : public CallContext {
 public:
  Emitter(graph::Graph* g, bool training, std::string seed_input);
  void BeginLayer(Layer* layer);

  bool training() const override { return training_; }
  std::string Weight(std::string_view local) override;
  std::vector<std::string> Emit(std::string_view op, std::vector<std::string> inputs, graph::AttributeMap attrs,
                                int num_outputs, std::string_view domain) override;
  std::string Constant(Tensor value) override;
  StatusOr<TensorSpec> PhysicalSpec(const std::string& value) override;
  void UpdateState(std::string_view local, std::string new_value) override;
  std::string StepSeed() override;
  const std::string& layer_name() const override { return layer_name_; }

  const std::map<std::string, std::string>& state_updates() const { return state_updates_; }
  bool uses_seed() const { return uses_seed_; }

 private:
  graph::Graph* g_;
  bool training_;
  std::string seed_input_;
  Layer* layer_ = nullptr;
  std::string layer_name_ = "model";
  int counter_ = 0;
  std::map<std::string, std::string> state_updates_;
  bool uses_seed_ = false;
  graph::InferredGraph inferred_;
  size_t inferred_nodes_ = SIZE_MAX, inferred_inits_ = SIZE_MAX, inferred_inputs_ = SIZE_MAX;
};

struct Model::Impl {
  std::string name;
  std::vector<KerasTensor> inputs;
  std::vector<ModelOutput> outputs;
  std::vector<std::pair<KerasTensor, double>> aux;
  bool built = false;
  std::vector<std::shared_ptr<internal::CallNode>> order;  // topological, inputs included
  std::vector<std::shared_ptr<Layer>> layers;               // distinct, topological
  std::vector<std::string> input_names, output_names;
  std::vector<TensorSpec> input_specs;
  std::vector<WeightSpec> weight_specs;
  std::vector<std::pair<const Layer*, size_t>> weight_owners;  // per weight_specs entry: its layer and index there
  std::map<std::string, Tensor> weights;
  std::set<const Layer*> declared_layers;
  std::unordered_map<const internal::CallNode*, std::vector<TensorSpec>> out_specs;  // logical, after Build

  Status Collect();
  Status Emit(Emitter& em, graph::Graph& g, bool declare_weights,
              std::unordered_map<const internal::CallNode*, std::vector<Value>>* values);
};

}  // namespace strata::nn
