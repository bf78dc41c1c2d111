// The plan-time specialised shape kernels (src/ops/fast/): Slice block copies and the view kernels, against the
// reference kernels (tests/ops/op_harness.h). Every row names its kernel: the row fails when it declines.
#include "tests/ops/op_harness.h"

namespace strata::testing {
namespace {

OpCase SliceRow(std::string label, std::vector<int64_t> x, std::vector<int64_t> starts, std::vector<int64_t> ends,
                std::vector<int64_t> axes, std::vector<int64_t> steps, DType dtype = DType::kFloat32) {
  const int64_t n = static_cast<int64_t>(starts.size());
  OpCase c{.label = std::move(label),
           .op_type = "Slice",
           .inputs = {dtype == DType::kFloat32 ? RandomF(x, 1) : Cast(RandomF(x, 1, -100, 100), dtype),
                      I64(starts, {n}), I64(ends, {n})},
           .constant_inputs = {1, 2},
           .kernel = "fast"};
  if (!axes.empty()) {
    c.inputs.push_back(I64(axes, {n}));
    c.constant_inputs.push_back(3);
  }
  if (!steps.empty()) {
    if (axes.empty()) {
      c.inputs.push_back(Tensor());
    }
    c.inputs.push_back(I64(steps, {n}));
    c.constant_inputs.push_back(4);
  }
  return c;
}

TEST(FastSliceTest, Rows) {
  RunOpCase(SliceRow("last axis thirds (q/k/v split)", {32, 1, 384}, {128}, {256}, {-1}, {}));
  RunOpCase(SliceRow("leading axis, contiguous block", {6, 4, 5}, {1}, {4}, {0}, {}));
  RunOpCase(SliceRow("middle axis", {3, 7, 5}, {2}, {6}, {1}, {}));
  RunOpCase(SliceRow("several axes with steps", {5, 8, 9}, {0, 1, 8}, {5, 8, 0}, {0, 1, 2}, {2, 3, -2}));
  RunOpCase(SliceRow("negative starts/ends, clamped ends", {4, 10}, {-3, -100}, {1000, -2}, {1, 0}, {}));
  RunOpCase(SliceRow("reverse whole axis", {3, 6}, {-1}, {INT64_MIN}, {1}, {-1}));
  RunOpCase(SliceRow("empty result", {3, 6}, {4}, {2}, {1}, {}));
  RunOpCase(SliceRow("int64 data, default axes", {4, 6}, {1, 2}, {3, 5}, {}, {}, DType::kInt64));
  OpCase runtime = SliceRow("runtime starts", {4, 6}, {1}, {3}, {0}, {});
  runtime.constant_inputs = {2, 3};
  runtime.expect_decline = true;
  RunOpCase(runtime);
}

TEST(FastViewTest, Rows) {
  RunOpCase({.label = "Reshape with -1 and 0",
             .op_type = "Reshape",
             .inputs = {RandomF({2, 3, 4}, 1), I64({0, -1}, {2})},
             .constant_inputs = {1},
             .kernel = "view"});
  RunOpCase({.label = "Flatten axis 2",
             .op_type = "Flatten",
             .attrs = {{"axis", AInt(2)}},
             .inputs = {RandomF({2, 3, 4, 5}, 1)},
             .kernel = "view"});
  RunOpCase({.label = "Unsqueeze",
             .op_type = "Unsqueeze",
             .inputs = {RandomF({3, 4}, 1), I64({0, 3}, {2})},
             .constant_inputs = {1},
             .kernel = "view"});
  RunOpCase({.label = "Squeeze",
             .op_type = "Squeeze",
             .inputs = {RandomF({3, 1, 4}, 1), I64({1}, {1})},
             .constant_inputs = {1},
             .kernel = "view"});
  RunOpCase({.label = "Transpose moving a dim of size 1",
             .op_type = "Transpose",
             .attrs = {{"perm", AInts({1, 0, 2})}},
             .inputs = {RandomF({5, 1, 4}, 1)},
             .kernel = "view"});
  RunOpCase({.label = "Transpose of a real permutation",
             .op_type = "Transpose",
             .attrs = {{"perm", AInts({1, 0, 2})}},
             .inputs = {RandomF({5, 2, 4}, 1)},
             .kernel = "view",
             .expect_decline = true});
  RunOpCase({.label = "Identity int32",
             .op_type = "Identity",
             .inputs = {Cast(RandomF({5}, 1, 0, 9), DType::kInt32)},
             .kernel = "view"});
}

}  // namespace
}  // namespace strata::testing
