// TF_CONFIG parsing for multi_worker_mirrored (src/train/distributed.cc); the MPI paths run under mpirun in
// tests/train/mpi_train.sh.
#include <gtest/gtest.h>

#include "train/distributed.h"

namespace strata::train {
namespace {

TEST(TfConfigTest, WorkersAndChief) {
  auto none = ParseTfConfig("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto w = ParseTfConfig(R"({"cluster": {"worker": ["a:1", "b:1", "c:1"]}, "task": {"type": "worker", "index": 2}})");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ((*w)->rank, 2);
  EXPECT_EQ((*w)->size, 3);
  // The chief is rank 0, the workers follow it.
  const char* cluster = R"({"cluster": {"chief": ["c:1"], "worker": ["a:1", "b:1"]}, "task": )";
  auto chief = ParseTfConfig(std::string(cluster) + R"({"type": "chief", "index": 0}})");
  ASSERT_TRUE(chief.ok()) << chief.status().message();
  EXPECT_EQ((*chief)->rank, 0);
  EXPECT_EQ((*chief)->size, 3);
  auto worker = ParseTfConfig(std::string(cluster) + R"({"type": "worker", "index": 1}})");
  ASSERT_TRUE(worker.ok());
  EXPECT_EQ((*worker)->rank, 2);
  EXPECT_EQ((*worker)->description, "task worker:1 of a cluster of 1 chief and 2 workers");
}

TEST(TfConfigTest, ErrorsSayWhatIsWrong) {
  auto message = [](const std::string& json) {
    auto r = ParseTfConfig(json);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_NE(message("{").find("TF_CONFIG"), std::string::npos);
  EXPECT_NE(message(R"({"task": {"type": "worker", "index": 0}})").find("expected {\"cluster\""), std::string::npos);
  EXPECT_NE(message(R"({"cluster": {"worker": ["a"]}, "task": {"type": "worker", "index": 1}})")
                .find("task worker:1 is outside cluster.worker (1 tasks)"),
            std::string::npos);
  EXPECT_NE(message(R"({"cluster": {"worker": ["a"], "ps": ["p"]}, "task": {"type": "worker", "index": 0}})")
                .find("cluster.ps"),
            std::string::npos);
  EXPECT_NE(message(R"({"cluster": {"worker": ["a"]}, "task": {"type": "evaluator", "index": 0}})")
                .find("task.type 'evaluator' is not chief or worker"),
            std::string::npos);
  EXPECT_NE(message(R"({"cluster": {"worker": "a:1"}, "task": {"type": "worker", "index": 0}})")
                .find("cluster.worker must be a list"),
            std::string::npos);
}

TEST(TfConfigTest, NotLaunchedByMpiHere) {
  // The test binary runs without mpirun: strata train must behave as one process (no MPI initialization).
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMIX_RANK") == nullptr &&
      std::getenv("PMI_RANK") == nullptr) {
    EXPECT_EQ(LaunchedWorldSize(), 0);
  }
}

}  // namespace
}  // namespace strata::train
