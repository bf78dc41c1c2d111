// Multi-worker data parallelism over MPI (docs/training.md "Multi-worker training"): the Collective a Trainer uses
// when `strata train --distribution_strategy multi_worker_mirrored` runs under mpirun, srun or the MPI Operator.
// distributed.cc is the only file that includes mpi.h.
//
// Every wait is bounded: collectives are non-blocking calls polled against a deadline (timeout_s), so a worker that
// died or hangs makes the others fail with DEADLINE_EXCEEDED naming it (by its pid, for workers on this host) instead
// of waiting forever; MPI errors are returned (MPI_ERRORS_RETURN), never fatal inside MPI.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/train.h"

namespace strata::train {

struct MpiOptions {
  // Gradients are fused into buckets of at most this many bytes (in the order given, reverse layer order), each
  // reduced by its own non-blocking allreduce started as soon as it is packed.
  int64_t bucket_bytes = 25 << 20;
  // Each bucket travels as non-blocking reductions of at most this many bytes, all in flight together: MPI pipelines
  // several moderate messages better than one large one (on shared memory, 1 MiB pieces of 100 MB reduce faster
  // than one 100 MB MPI_Allreduce), and each piece is scaled by 1/size as soon as it arrives, while it is in cache.
  int64_t chunk_bytes = 1 << 20;
  // The longest any collective may wait for the other workers.
  double timeout_s = 60;
  // Fixed-order reduction (rank 0 + rank 1 + ... on rank 0, then broadcast): bitwise-identical results on every
  // rank and in every run. Otherwise MPI_Iallreduce(MPI_SUM), whose order is MPI's choice.
  bool deterministic = false;
};

// TF_CONFIG ({"cluster": {"chief": [..], "worker": [...]}, "task": {"type": "worker", "index": i}}): this task's
// rank (the chief first, then the workers in order) and the world size. nullopt when `json` is empty.
struct TfConfigTask {
  int rank = 0;
  int size = 0;
  std::string description;  // "task worker:1 of cluster {chief: 1, worker: 3}"
};
StatusOr<std::optional<TfConfigTask>> ParseTfConfig(std::string_view json);

// Whether an MPI launcher started this process, and the world size it announced (environment of Open MPI, PMIx,
// PMI/Slurm), without initializing MPI. 0 when not launched by one.
int LaunchedWorldSize();

class MpiCollective final : public Collective {
 public:
  // Initializes MPI (once per process; MPI_Finalize runs at exit) and checks TF_CONFIG, when set, against MPI's
  // rank and size.
  static StatusOr<std::shared_ptr<MpiCollective>> Create(MpiOptions options = {});

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // The algorithm of Open MPI's non-blocking allreduce (its libnbc component: the gradient buckets' reductions), as
  // Open MPI reports it through the MPI tool interface: "ring", "binomial", "rabenseifner", "recursive_doubling", or
  // "chosen per call" (libnbc's own rule). Create makes it ring unless the user chose one
  // (OMPI_MCA_coll_libnbc_iallreduce_algorithm, `mpirun --mca coll_libnbc_iallreduce_algorithm`): libnbc's rule
  // takes binomial (a reduce to one rank, then a broadcast) below 4 ranks, which reduced the buckets of a 2-worker
  // step at half the bandwidth of a blocking MPI_Allreduce (BENCHMARKS.md "Multi-worker training"). Empty where the
  // MPI library is not Open MPI or does not say.
  static std::string IallreduceAlgorithm();
  Status AllReduceMean(const std::vector<Tensor*>& tensors, std::string_view what) override;
  Status Broadcast(const std::vector<Tensor*>& tensors, int root, std::string_view what) override;
  Status AllReduceMean(std::vector<double>* values, std::string_view what) override;
  // Overlapped AllReduceMean: the same buckets, reductions and result bits, each bucket's reduction started by the
  // Add that completes it (in bucket order), progressed by Add and Test (which scale each piece that has arrived).
  // One at a time: the bucket buffers are the collective's, reused from one to the next. Wait returns views of the
  // buckets (no copy); a bucket whose views are still held when the next reduction starts gets a new buffer.
  StatusOr<std::unique_ptr<PendingAllReduce>> StartAllReduceMean(const std::vector<Shape>& shapes,
                                                                 std::string_view what) override;
  // Under `deterministic`, in rank order on rank 0 then broadcast (the same bits everywhere); MPI_SUM otherwise.
  Status AllReduceSum(float* data, int64_t n, std::string_view what) override;
  // AllReduceMean and StartAllReduceMean without the division by the number of workers (the trainer's: its gradient
  // graph divides the loss instead).
  Status AllReduceSum(const std::vector<Tensor*>& tensors, std::string_view what) override;
  StatusOr<std::unique_ptr<PendingAllReduce>> StartAllReduceSum(const std::vector<Shape>& shapes,
                                                                std::string_view what) override;
  // Replaces `value` by its minimum over the workers.
  Status AllReduceMin(int64_t* value, std::string_view what);
  // FailedPrecondition naming every rank whose `value` differs from rank 0's (`what` says what the value is).
  Status CheckSame(const std::string& value, std::string_view what);
  Status Barrier(std::string_view what);
  const MpiOptions& options() const { return options_; }
  void set_deterministic(bool d) { options_.deterministic = d; }
  // Seconds spent in the last AllReduceMean of tensors waiting for communication after the last bucket was packed.
  double last_wait_seconds() const { return last_wait_s_; }
  // Over every StartAllReduceMean so far: buckets reduced, those started before their reduction's last tensor was
  // added (during the backward pass, with compute still to do), and those already complete when Wait began.
  struct OverlapStats {
    int64_t buckets = 0;
    int64_t started_early = 0;
    int64_t done_before_wait = 0;
  };
  const OverlapStats& overlap_stats() const { return overlap_stats_; }
  // Ends the whole job now (MPI_Abort), after an error has been reported; never returns.
  [[noreturn]] static void Abort(int code);

 private:
  MpiCollective() = default;
  class Pending;
  friend class Pending;
  class Chunked;  // one reduction's buckets, in pieces of at most chunk_bytes (distributed.cc)
  // The bucketed reduction of AllReduceMean (scale 1/size) and AllReduceSum (scale 1), and of their Start versions.
  Status ReduceTensors(const std::vector<Tensor*>& tensors, float scale, std::string_view what);
  StatusOr<std::unique_ptr<PendingAllReduce>> StartReduction(const std::vector<Shape>& shapes, float scale,
                                                             std::string_view what);
  struct Peer {
    std::string host;
    int64_t pid = 0;
  };
  // Calls `poll` until it returns true, the deadline passes (DeadlineExceeded naming the workers known to be gone)
  // or it returns an error (MPI's).
  Status PollUntil(const std::function<StatusOr<bool>()>& poll, std::string_view what);
  // PollUntil over MPI_Testall of `requests`, which points to `n` MPI_Requests (mpi.h stays out of this header).
  Status WaitAll(void* requests, int n, std::string_view what);
  std::string DescribeMissing() const;
  MpiOptions options_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<Peer> peers_;
  double last_wait_s_ = 0;
  std::vector<std::vector<float>> buffers_;  // the bucket buffers, reused from step to step
  // StartAllReduceMean's bucket buffers (64-byte aligned), likewise reused, unless a mean its Wait handed out (a view
  // of them) is still held: then that bucket gets a new buffer.
  struct SharedBucket {
    std::shared_ptr<float> data;
    int64_t capacity = 0;  // floats
  };
  std::vector<SharedBucket> pending_buffers_;
  bool pending_active_ = false;
  bool pending_abandoned_ = false;  // a Pending went with reductions in flight: its buffers may still be written
  OverlapStats overlap_stats_;
};

// Replaces the state (weights, slots, counters, learning-rate override, position) of every worker by rank 0's: every
// worker resumes from the checkpoint rank 0 read.
Status BroadcastTrainingState(Collective& c, TrainingState* state);

}  // namespace strata::train
