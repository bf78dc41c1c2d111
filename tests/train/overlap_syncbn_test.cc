// The Trainer's multi-worker step without MPI, against a collective standing for two workers that hold the same
// values as this process (means are the values, sums twice them): the overlapped gradient reduction is fed every
// gradient during the gradient graph's run and ends with the same weights as the non-overlapped one; a
// SyncBatchNormalization model on it trains as batch normalization on one worker (a batch seen twice has its own
// statistics), and nn::SynchronizeBatchNormalization switches a model's layers. The MPI paths run under mpirun in
// tests/train/mpi_overlap_syncbn.sh.
#include <gtest/gtest.h>

#include <cmath>

#include "core/random.h"
#include "train_test_util.h"

namespace strata::train {
namespace {

class RecordingPending final : public PendingAllReduce {
 public:
  RecordingPending(std::unique_ptr<PendingAllReduce> inner, int* adds, int* tests, int* adds_at_wait)
      : inner_(std::move(inner)), adds_(adds), tests_(tests), adds_at_wait_(adds_at_wait) {}
  Status Add(size_t i, const Tensor& v) override {
    ++*adds_;
    return inner_->Add(i, v);
  }
  Status Test() override {
    ++*tests_;
    return inner_->Test();
  }
  StatusOr<std::vector<Tensor>> Wait() override {
    *adds_at_wait_ = *adds_;
    return inner_->Wait();
  }

 private:
  std::unique_ptr<PendingAllReduce> inner_;
  int *adds_, *tests_, *adds_at_wait_;
};

// Two workers with identical values.
class MirrorCollective final : public Collective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Status AllReduceMean(const std::vector<Tensor*>&, std::string_view) override { return Status::OK(); }
  Status Broadcast(const std::vector<Tensor*>&, int, std::string_view) override { return Status::OK(); }
  Status AllReduceMean(std::vector<double>*, std::string_view) override { return Status::OK(); }
  // The trainer's gradient reduction: the gradient graph divided by 2 (the workers), the sum of two mirrors doubles.
  StatusOr<std::unique_ptr<PendingAllReduce>> StartAllReduceSum(const std::vector<Shape>& shapes,
                                                                std::string_view what) override {
    ++starts;
    STRATA_ASSIGN_OR_RETURN(auto inner, Collective::StartAllReduceSum(shapes, what));
    return std::unique_ptr<PendingAllReduce>(new RecordingPending(std::move(inner), &adds, &tests, &adds_at_wait));
  }
  Status AllReduceSum(const std::vector<Tensor*>& tensors, std::string_view) override {
    ++tensor_sums;
    for (Tensor* t : tensors) {
      *t = t->Clone();  // replaced, as Collective's contract says: the session's buffers are not written
      for (int64_t i = 0; i < t->num_elements(); ++i) t->data<float>()[i] *= 2;
    }
    return Status::OK();
  }
  // SyncBatchNormalization's statistics.
  Status AllReduceSum(float* data, int64_t n, std::string_view) override {
    ++sums;
    for (int64_t i = 0; i < n; ++i) data[i] *= 2;
    return Status::OK();
  }
  int starts = 0, adds = 0, tests = 0, adds_at_wait = 0, sums = 0, tensor_sums = 0;
};

data::Element Images(int n, uint64_t seed) {
  Rng rng(seed);
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{n, 4, 4, 2});
  Tensor y = Tensor::Empty(DType::kInt64, Shape{n});
  for (int i = 0; i < n; ++i) {
    const int c = static_cast<int>(rng.Below(3));
    y.data<int64_t>()[i] = c;
    for (int j = 0; j < 32; ++j) x.data<float>()[i * 32 + j] = (j % 3 == c ? 1.5f : 0.0f) + 0.8f * rng.Normal();
  }
  data::Element e;
  e.Set("x", x);
  e.Set("label", y);
  return e;
}

// x [4, 4, 2] -> Conv2D 3 -> BatchNormalization -> relu -> Flatten -> Dense 3.
std::unique_ptr<nn::Model> ConvBn(bool synchronized) {
  auto in = nn::Input({4, 4, 2}, "x");
  auto h = nn::Conv2D(3, 3, {.padding = "same"})(in);
  h = nn::BatchNormalization({.momentum = 0.9, .synchronized = synchronized})(h);
  h = nn::Activation("relu")(h);
  auto logits = nn::Dense(3)(nn::Flatten()(h));
  return std::make_unique<nn::Model>(std::vector<nn::KerasTensor>{in}, std::vector<nn::ModelOutput>{{"logits", logits}},
                                     "conv_bn");
}

// overlap_min_bytes 0: overlap whatever the size (this model's gradients are far below the default's 4 MiB).
std::map<std::string, Tensor> Train(nn::Model* model, std::shared_ptr<Collective> c, bool overlap, int steps,
                                    int64_t overlap_min_bytes = 0) {
  TrainerOptions o;
  o.seed = 4;
  o.deterministic = true;
  o.collective = std::move(c);
  o.overlap_allreduce = overlap;
  o.overlap_min_bytes = overlap_min_bytes;
  auto t = Trainer::Create(model, testutil::Compile("sgd", 0.1), o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return {};
  for (int s = 0; s < steps; ++s) {
    auto logs = (*t)->TrainOnBatch(Images(8, 30 + s));
    EXPECT_TRUE(logs.ok()) << logs.status().ToString();
  }
  return (*t)->GetState().weights;
}

void ExpectClose(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [k, w] : want) {
    const Tensor& g = got.at(k);
    ASSERT_EQ(g.shape(), w.shape()) << k;
    for (int64_t i = 0; i < w.num_elements(); ++i)
      EXPECT_NEAR(g.data<float>()[i], w.data<float>()[i], tol * (1 + std::abs(w.data<float>()[i])))
          << k << "[" << i << "]";
  }
}

TEST(OverlapTest, EveryGradientJoinsTheReductionDuringTheRunAndTheResultIsTheSame) {
  auto overlapped_c = std::make_shared<MirrorCollective>();
  auto m1 = ConvBn(false);
  const auto overlapped = Train(m1.get(), overlapped_c, true, 3);
  // 3 steps, each reducing 6 gradients (conv kernel and bias, gamma, beta, dense kernel and bias) and the 2 moving
  // statistics.
  EXPECT_EQ(overlapped_c->starts, 3);
  EXPECT_EQ(overlapped_c->adds, 3 * 8);
  EXPECT_EQ(overlapped_c->adds_at_wait, 3 * 8);  // all of them before the waits, i.e. during the runs
  EXPECT_GT(overlapped_c->tests, 0);             // progress after the steps of the runs
  auto plain_c = std::make_shared<MirrorCollective>();
  auto m2 = ConvBn(false);
  const auto plain = Train(m2.get(), plain_c, false, 3);
  EXPECT_EQ(plain_c->starts, 0);
  EXPECT_EQ(plain_c->tensor_sums, 3);
  EXPECT_TRUE(testutil::SameBits(overlapped, plain));
  // Two mirrored workers are one worker: the gradient graph's division by the workers and the collective's sum give
  // the mean of equal gradients and statistics, the gradients themselves.
  auto m3 = ConvBn(false);
  ExpectClose(overlapped, Train(m3.get(), nullptr, true, 3), 1e-6);
}

// The default rule: gradients under TrainerOptions::overlap_min_bytes (4 MiB) are reduced after the backward pass,
// those at or above it during it; the same weights either way.
TEST(OverlapTest, SmallGradientsAreReducedAfterTheBackwardPassByDefault) {
  auto small_c = std::make_shared<MirrorCollective>();
  auto m1 = ConvBn(false);
  const auto small = Train(m1.get(), small_c, true, 2, TrainerOptions().overlap_min_bytes);
  EXPECT_EQ(TrainerOptions().overlap_min_bytes, int64_t{4} << 20);
  EXPECT_EQ(small_c->starts, 0);
  EXPECT_EQ(small_c->adds, 0);
  EXPECT_EQ(small_c->tensor_sums, 2);
  // The threshold at this model's gradient bytes (conv 3x3x2x3 + 3, gamma 3, beta 3, dense 48x3 + 3): overlapped.
  const int64_t bytes = (3 * 3 * 2 * 3 + 3 + 3 + 3 + 48 * 3 + 3) * 4;
  auto at_c = std::make_shared<MirrorCollective>();
  auto m2 = ConvBn(false);
  const auto at = Train(m2.get(), at_c, true, 2, bytes);
  EXPECT_EQ(at_c->starts, 2);
  EXPECT_EQ(at_c->adds, 2 * 8);  // every gradient and statistic added during the runs
  auto above_c = std::make_shared<MirrorCollective>();
  auto m3 = ConvBn(false);
  Train(m3.get(), above_c, true, 2, bytes + 1);
  EXPECT_EQ(above_c->starts, 0);
  EXPECT_TRUE(testutil::SameBits(small, at));
}

TEST(SyncBatchNormTrainTest, TwoWorkersWithTheSameBatchTrainAsOneWorkerWithBatchNorm) {
  auto bn = ConvBn(false);
  const auto ref = Train(bn.get(), nullptr, true, 3);
  auto mirror = std::make_shared<MirrorCollective>();
  auto sync = ConvBn(true);
  const auto got = Train(sync.get(), mirror, true, 3);
  EXPECT_EQ(mirror->sums, 3 * 3);  // per step: two in the forward pass, one in the backward pass
  ExpectClose(got, ref, 2e-5);
  // One worker (no collective): the same layer is batch normalization.
  auto alone = ConvBn(true);
  ExpectClose(Train(alone.get(), nullptr, true, 3), ref, 2e-5);
}

TEST(SyncBatchNormTrainTest, SynchronizeSwitchesEveryBatchNormLayerOnce) {
  auto plain = ConvBn(false);
  ASSERT_TRUE(plain->Build(1).ok());
  EXPECT_EQ(nn::SynchronizeBatchNormalization(*plain), 1);
  EXPECT_EQ(nn::SynchronizeBatchNormalization(*plain), 0);
  // Now it reduces through the collective.
  auto mirror = std::make_shared<MirrorCollective>();
  Train(plain.get(), mirror, true, 1);
  EXPECT_EQ(mirror->sums, 3);
}

}  // namespace
}  // namespace strata::train
