// Helpers shared by the train_test sources: the small MLP they train, its compile options, and a bitwise comparison
// of weight maps.
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "strata/train.h"

namespace strata::train::testutil {

// Input "x" [8] -> Dense 16 relu [-> Dropout] -> Dense 3, output "logits".
inline std::unique_ptr<nn::Model> Mlp(double dropout = 0.0) {
  auto in = nn::Input({8}, "x");
  auto h = nn::Dense(16, {.activation = "relu"})(in);
  if (dropout > 0) h = nn::Dropout(dropout)(h);
  auto logits = nn::Dense(3)(h);
  return std::make_unique<nn::Model>(std::vector<nn::KerasTensor>{in},
                                     std::vector<nn::ModelOutput>{{"logits", logits}}, "mlp");
}

// Sparse categorical cross-entropy on "logits" with accuracy, at a constant learning rate.
inline CompileOptions Compile(std::string optimizer = "adam", double lr = 0.01) {
  CompileOptions c;
  c.loss["logits"] = nn::Loss::SparseCategoricalCrossentropy(true);
  c.metrics["logits"] = {"accuracy"};
  c.optimizer = std::move(optimizer);
  c.optimizer_config.learning_rate = optim::ConstantLR(lr);
  return c;
}

// Same keys, and per key the same dtype, shape and bytes.
inline bool SameBits(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, t] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second.dtype() != t.dtype() || it->second.shape() != t.shape() ||
        std::memcmp(it->second.raw_data(), t.raw_data(), t.byte_size()) != 0)
      return false;
  }
  return true;
}

}  // namespace strata::train::testutil
