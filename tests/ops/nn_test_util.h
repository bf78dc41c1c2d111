// Helpers for the nn family's op tables (nn_test.cc, nn_conv_test.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "tests/ops/op_harness.h"

namespace strata::testing {

// A deterministic integer-valued tensor: element i is ((i * mul + add) % mod - off) * scale. The expected values of
// the table rows were computed with numpy from the same pattern (numpy: ((arange(n) * mul + add) % mod - off)).
inline Tensor Pat(std::vector<int64_t> shape, int64_t mul = 7, int64_t add = 3, int64_t mod = 11, int64_t off = 5,
                  float scale = 1.0f) {
  Tensor t = Tensor::Empty(DType::kFloat32, Shape(shape));
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = static_cast<float>((i * mul + add) % mod - off) * scale;
  return t;
}

}  // namespace strata::testing
