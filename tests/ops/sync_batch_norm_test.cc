// strata.SyncBatchNormalization and its gradient op: finite differences (one worker, float64), the forward outputs
// against the batch-norm formula written out here, and the cross-worker sums: with a collective standing for two
// workers holding the same batch, every output equals the one-worker one (the statistics of a batch seen twice are
// its own, which holds only when the count is reduced with the sums); a collective's error ends the run.
#include <cmath>

#include "ops/collective.h"
#include "strata/graph.h"
#include "tests/ops/grad_test_util.h"

namespace strata::testing {
namespace {

TEST(SyncBatchNormTest, GradientMatchesFiniteDifferences) {
  GradRow({.label = "sync batchnorm 4d",
           .op_type = "SyncBatchNormalization",
           .domain = "strata",
           .attrs = {{"epsilon", AFloat(1e-3f)}, {"momentum", AFloat(0.9f)}},
           .inputs = {RD({3, 2, 2, 3}, 1), RD({2}, 2, 0.5, 1.5), RD({2}, 3), RD({2}, 4), RD({2}, 5, 0.5, 1.5)},
           .grad_inputs = {0, 1, 2}});
  GradRow({.label = "sync batchnorm 2d",
           .op_type = "SyncBatchNormalization",
           .domain = "strata",
           .inputs = {RD({5, 3}, 6), RD({3}, 7, 0.5, 1.5), RD({3}, 8), RD({3}, 9), RD({3}, 10, 0.5, 1.5)},
           .grad_inputs = {0, 1, 2}});
}

TEST(SyncBatchNormTest, ForwardIsBatchNormOverTheBatch) {
  // X (N=2, C=2, 3): channel 0 holds 1..6, channel 1 holds 0, 2, 4, 6, 8, 10 (in batch order n0 then n1).
  const Tensor x = F({1, 2, 3, 0, 2, 4, 4, 5, 6, 6, 8, 10}, {2, 2, 3});
  const Tensor scale = F({2, 0.5f}, {2}), bias = F({1, -1}, {2}), mean = F({0.5f, 1}, {2}), var = F({2, 3}, {2});
  const float eps = 0.01f, mom = 0.8f;
  // Population statistics of each channel, written out.
  const double m0 = 3.5, v0 = 17.5 / 6, m1 = 5, v1 = 70.0 / 6;
  const float* px = x.data<float>();
  std::vector<float> y(12);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 3; ++i) {
        const int k = (n * 2 + c) * 3 + i;
        const double m = c == 0 ? m0 : m1, v = c == 0 ? v0 : v1;
        y[k] = static_cast<float>(scale.data<float>()[c] * (px[k] - m) / std::sqrt(v + eps) + bias.data<float>()[c]);
      }
  RunOpCase(
      {.label = "sync batchnorm forward",
       .op_type = "SyncBatchNormalization",
       .domain = "strata",
       .attrs = {{"epsilon", AFloat(eps)}, {"momentum", AFloat(mom)}},
       .inputs = {x, scale, bias, mean, var},
       .num_outputs = 5,
       .expected = {F(y, {2, 2, 3}),
                    F({static_cast<float>(0.5 * mom + m0 * (1 - mom)), static_cast<float>(1 * mom + m1 * (1 - mom))},
                      {2}),
                    F({static_cast<float>(2 * mom + v0 * (1 - mom)), static_cast<float>(3 * mom + v1 * (1 - mom))},
                      {2}),
                    F({3.5f, 5.0f}, {2}),
                    F({static_cast<float>(1 / std::sqrt(v0 + eps)), static_cast<float>(1 / std::sqrt(v1 + eps))}, {2})},
       .rtol = 1e-5,
       .atol = 1e-5});
}

// y, saved_mean, saved_inv_std = SyncBatchNormalization(x, ...); dx, dscale, dbias = its gradient op on dy.
std::shared_ptr<graph::Model> SyncBnModel() {
  auto m = std::make_shared<graph::Model>();
  m->opset_imports[""] = 17;
  m->opset_imports["strata"] = 1;
  m->graph.name = "sync_bn";
  const PartialShape xs = PartialShape::Of({Dim(4), Dim(3), Dim(5)});
  const PartialShape cs = PartialShape::Of({Dim(3)});
  m->graph.inputs = {{"x", DType::kFloat32, xs}, {"dy", DType::kFloat32, xs}};
  m->graph.outputs = {{"y", DType::kFloat32, xs},  {"rm", DType::kFloat32, cs},     {"rv", DType::kFloat32, cs},
                      {"dx", DType::kFloat32, xs}, {"dscale", DType::kFloat32, cs}, {"dbias", DType::kFloat32, cs}};
  m->graph.initializers["scale"] = F({1.5f, 0.5f, 2.0f}, {3});
  m->graph.initializers["bias"] = F({0.1f, -0.2f, 0.3f}, {3});
  m->graph.initializers["mean"] = F({0.0f, 0.1f, 0.2f}, {3});
  m->graph.initializers["var"] = F({1.0f, 1.5f, 2.0f}, {3});
  graph::Node bn{.name = "bn",
                 .op_type = "SyncBatchNormalization",
                 .domain = "strata",
                 .inputs = {"x", "scale", "bias", "mean", "var"},
                 .outputs = {"y", "rm", "rv", "sm", "sis"},
                 .opset = 1};
  bn.attrs["epsilon"] = graph::Attribute::Float(1e-3f);
  graph::Node grad{.name = "bn_grad",
                   .op_type = "SyncBatchNormalizationGrad",
                   .domain = "strata",
                   .inputs = {"dy", "x", "scale", "sm", "sis"},
                   .outputs = {"dx", "dscale", "dbias"},
                   .opset = 1};
  m->graph.nodes = {bn, grad};
  return m;
}

Tensor ToFloat(const Tensor& d) {
  Tensor f = Tensor::Empty(DType::kFloat32, d.shape());
  for (int64_t i = 0; i < d.num_elements(); ++i) f.data<float>()[i] = static_cast<float>(d.data<double>()[i]);
  return f;
}

std::vector<Tensor> RunSyncBn(const ops::AllReduceSumFn* collective, Status* status = nullptr) {
  auto s = graph::Session::Create(SyncBnModel(), {});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  const Tensor x = ToFloat(RD({4, 3, 5}, 11, -2, 3));
  const Tensor dy = ToFloat(RD({4, 3, 5}, 12));
  std::vector<Tensor> out;
  ops::ScopedAllReduceSum scope(collective);
  const Status st = (*s)->Run({{"x", x}, {"dy", dy}}, &out);
  if (status != nullptr)
    *status = st;
  else
    EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST(SyncBatchNormTest, TwoWorkersWithTheSameBatchGiveTheOneWorkerOutputs) {
  const std::vector<Tensor> alone = RunSyncBn(nullptr);
  int calls = 0;
  const ops::AllReduceSumFn twice = [&](float* data, int64_t n, std::string_view) {
    ++calls;
    for (int64_t i = 0; i < n; ++i) data[i] *= 2;  // a second worker with the same values
    return Status::OK();
  };
  const std::vector<Tensor> two = RunSyncBn(&twice);
  EXPECT_EQ(calls, 3);  // the forward's sums + count, its squared deviations, the gradient's sums + count
  ASSERT_EQ(alone.size(), 6u);
  ASSERT_EQ(two.size(), 6u);
  // The per-worker dscale and dbias are this worker's own sums: equal too.
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(CompareTensors(two[i], alone[i], 1e-5, 1e-6), "") << "output " << i;
  // A collective that counted only the sums (not the count) would give other statistics: the check can fail.
  const ops::AllReduceSumFn sums_only = [&](float* data, int64_t n, std::string_view) {
    for (int64_t i = 0; i < n; ++i) data[i] *= (n == 4 && i == 3) || (n == 7 && i == 6) ? 1 : 2;
    return Status::OK();
  };
  const std::vector<Tensor> wrong = RunSyncBn(&sums_only);
  EXPECT_NE(CompareTensors(wrong[0], alone[0], 1e-5, 1e-6), "");
}

TEST(SyncBatchNormTest, ACollectiveErrorEndsTheRun) {
  const ops::AllReduceSumFn broken = [](float*, int64_t, std::string_view what) {
    return UnavailableError(what, ": rank 1 is gone");
  };
  Status st;
  RunSyncBn(&broken, &st);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("rank 1 is gone"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("bn"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace strata::testing
