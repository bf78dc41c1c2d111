// MpiCollective: the Trainer's collectives over MPI, every wait bounded by a deadline (see distributed.h).
#include "train/distributed.h"

#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/json.h"

namespace strata::train {
namespace {

std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return StrCat("MPI error ", code);
  return std::string(text, len);
}

Status MpiStatus(int code, std::string_view call, std::string_view what) {
  if (code == MPI_SUCCESS) return Status::OK();
  return UnavailableError(call, " for ", what, " failed: ", MpiErrorText(code),
                          " (a worker has probably exited; see the other workers' errors)");
}

// float sum as a non-commutative operation: MPI then combines the ranks' values in rank order, so a reduction gives
// the same bits in every run (MPI_SUM may combine in any order).
void OrderedFloatSum(void* in, void* inout, int* len, MPI_Datatype*) {
  const float* a = static_cast<const float*>(in);
  float* b = static_cast<float*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = a[i] + b[i];
}

MPI_Op OrderedSumOp() {
  static MPI_Op op = [] {
    MPI_Op o;
    MPI_Op_create(&OrderedFloatSum, /*commute=*/0, &o);
    return o;
  }();
  return op;
}

std::string Hostname() {
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  return name;
}

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? 0 : std::atoi(v);
}

// The state letter of a process in /proc/<pid>/stat (R, S, D, T, t, Z...); 'X' when there is no such process.
char ProcessState(int64_t pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return 'X';
  FILE* f = std::fopen(StrCat("/proc/", pid, "/stat").c_str(), "r");
  if (f == nullptr) return '?';
  char buf[512] = {0};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const char* paren = std::strrchr(buf, ')');  // "pid (comm) S ..."; comm may hold spaces and parentheses
  return paren != nullptr && paren + 2 < buf + n ? paren[2] : '?';
}

// Gradient buckets over tensors of `sizes` floats, in order: consecutive small tensors fused up to bucket_floats (one
// message instead of many); a tensor of at least kAloneFloats is a bucket of its own, reduced where it lies (packing
// it would only add two copies). A fused bucket also holds at most a quarter of all the floats (and at least 64 KiB):
// a model whose gradients fit one bucket still gets several, so that the reduction of the last layers' gradients,
// which backward produces first, starts while it computes the others. [first, last) tensor indices.
std::vector<std::pair<size_t, size_t>> PlanBuckets(const std::vector<int64_t>& sizes, int64_t bucket_bytes) {
  const int64_t bucket_floats = std::max<int64_t>(1, bucket_bytes / 4);
  constexpr int64_t kAloneFloats = 256 << 10;  // 1 MiB
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  const int64_t cap = std::min(bucket_floats, std::max<int64_t>(16 << 10, total / 4));
  auto alone = [&](size_t i) { return sizes[i] >= std::min(kAloneFloats, bucket_floats); };
  std::vector<std::pair<size_t, size_t>> buckets;
  for (size_t i = 0; i < sizes.size();) {
    size_t j = i;
    int64_t n = 0;
    while (j < sizes.size() && (j == i || (!alone(j) && n + sizes[j] <= cap))) {
      n += sizes[j];
      ++j;
      if (alone(j - 1)) break;
    }
    buckets.emplace_back(i, j);
    i = j;
  }
  return buckets;
}

// Where the tensors [first, last) of a fused bucket lie in its buffer: each on a 64-byte boundary (16 floats), so
// that the overlapped reduction can hand out views of the buffer as aligned as the executor's own tensors. Returns
// the bucket's float count; the last tensor is not padded (a bucket of one tensor is that tensor). Both reduction
// paths use this layout, so they make the same MPI calls with the same counts. The padding is reduced with the
// rest, elementwise, and never read.
int64_t BucketLayout(const std::vector<int64_t>& sizes, size_t first, size_t last, std::vector<int64_t>* offsets) {
  offsets->clear();
  int64_t n = 0;
  for (size_t i = first; i < last; ++i) {
    offsets->push_back(n);
    n += i + 1 < last ? (sizes[i] + 15) / 16 * 16 : sizes[i];
  }
  return n;
}

}  // namespace

int LaunchedWorldSize() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (int n = EnvInt(name); n > 0) return n;
  return std::getenv("PMIX_RANK") != nullptr || std::getenv("PMI_RANK") != nullptr ? 1 : 0;
}

StatusOr<std::optional<TfConfigTask>> ParseTfConfig(std::string_view json) {
  if (json.empty()) return std::optional<TfConfigTask>();
  STRATA_ASSIGN_OR_RETURN(Json j, Json::Parse(json, "TF_CONFIG"));
  const Json* cluster = j.is_object() ? j.Find("cluster") : nullptr;
  const Json* task = j.is_object() ? j.Find("task") : nullptr;
  if (cluster == nullptr || !cluster->is_object() || task == nullptr || !task->is_object())
    return InvalidArgumentError("TF_CONFIG: expected {\"cluster\": {\"worker\": [...]}, \"task\": {\"type\": "
                                "\"worker\", \"index\": i}}, got ", json);
  auto count = [&](const char* type) -> StatusOr<int> {
    const Json* list = cluster->Find(type);
    if (list == nullptr) return 0;
    if (!list->is_array()) return InvalidArgumentError("TF_CONFIG: cluster.", type, " must be a list of host:port");
    return static_cast<int>(list->size());
  };
  STRATA_ASSIGN_OR_RETURN(int chiefs, count("chief"));
  STRATA_ASSIGN_OR_RETURN(int workers, count("worker"));
  for (const auto& [type, v] : cluster->as_object())
    if (type != "chief" && type != "worker")
      return InvalidArgumentError("TF_CONFIG: cluster.", type, ": multi_worker_mirrored has only chief and worker "
                                  "tasks (no parameter servers or evaluators)");
  if (chiefs > 1) return InvalidArgumentError("TF_CONFIG: cluster.chief lists ", chiefs, " tasks; at most one");
  STRATA_ASSIGN_OR_RETURN(std::string type, task->GetString("type"));
  STRATA_ASSIGN_OR_RETURN(int64_t index, task->GetInt("index"));
  const int of_type = type == "chief" ? chiefs : type == "worker" ? workers : -1;
  if (of_type < 0) return InvalidArgumentError("TF_CONFIG: task.type '", type, "' is not chief or worker");
  if (index < 0 || index >= of_type)
    return InvalidArgumentError("TF_CONFIG: task ", type, ":", index, " is outside cluster.", type, " (", of_type,
                                " tasks)");
  TfConfigTask t;
  t.size = chiefs + workers;
  t.rank = type == "chief" ? 0 : chiefs + static_cast<int>(index);
  t.description = StrCat("task ", type, ":", index, " of a cluster of ", chiefs, " chief and ", workers, " workers");
  return std::optional<TfConfigTask>(t);
}

std::string MpiCollective::IallreduceAlgorithm() {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return "";
  std::string name;
  int index = 0, count = 0, value = -1;
  MPI_T_cvar_handle handle;
  if (MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
    if (count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS) {
      static const char* const kNames[] = {"chosen per call", "ring", "binomial", "rabenseifner", "recursive_doubling"};
      name = value >= 0 && value < 5 ? kNames[value] : StrCat("algorithm ", value);
    }
    MPI_T_cvar_handle_free(&handle);
  }
  MPI_T_finalize();
  return name;
}

StatusOr<std::shared_ptr<MpiCollective>> MpiCollective::Create(MpiOptions options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
#ifdef OPEN_MPI
    // Ring allreduce for the buckets, unless the user chose an algorithm (IallreduceAlgorithm): Open MPI reads its
    // parameters from the environment when it initializes, and `mpirun --mca` passes them the same way.
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "ring", /*overwrite=*/0);
#endif
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return UnavailableError("MPI_Init_thread failed: start the workers with mpirun, srun or the MPI Operator");
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::shared_ptr<MpiCollective> c(new MpiCollective());
  c->options_ = options;
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &c->size_);
  if (const char* tf = std::getenv("TF_CONFIG"); tf != nullptr) {
    STRATA_ASSIGN_OR_RETURN(std::optional<TfConfigTask> task, ParseTfConfig(tf));
    if (task && (task->rank != c->rank_ || task->size != c->size_))
      return FailedPreconditionError("TF_CONFIG describes ", task->description, " (rank ", task->rank, " of ",
                                     task->size, "), but MPI started this process as rank ", c->rank_, " of ",
                                     c->size_, ": give every worker its own TF_CONFIG with task.index = its MPI rank "
                                     "(or unset TF_CONFIG)");
  }
  // Who is who, for naming a worker that is gone: host and pid of every rank.
  char mine[280] = {0};
  std::snprintf(mine, sizeof(mine), "%s %lld", Hostname().c_str(), static_cast<long long>(getpid()));
  std::vector<char> all(sizeof(mine) * c->size_);
  MPI_Request req;
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Iallgather(mine, sizeof(mine), MPI_CHAR, all.data(), sizeof(mine), MPI_CHAR,
                                                  MPI_COMM_WORLD, &req),
                                   "MPI_Iallgather", "the worker table"));
  STRATA_RETURN_IF_ERROR(c->WaitAll(&req, 1, "the worker table"));
  for (int r = 0; r < c->size_; ++r) {
    const std::string entry(&all[r * sizeof(mine)]);
    const size_t sp = entry.rfind(' ');
    c->peers_.push_back({entry.substr(0, sp), std::atoll(entry.c_str() + sp + 1)});
  }
  return c;
}

std::string MpiCollective::DescribeMissing() const {
  const std::string host = Hostname();
  std::vector<std::string> gone, remote;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    if (peers_.size() <= static_cast<size_t>(r) || peers_[r].host != host) {
      remote.push_back(StrCat(r));
    } else if (const char state = ProcessState(peers_[r].pid); state == 'X' || state == 'Z') {
      gone.push_back(StrCat("rank ", r, " (pid ", peers_[r].pid, " on ", host, ") has exited"));
    } else if (state == 'T' || state == 't') {
      gone.push_back(StrCat("rank ", r, " (pid ", peers_[r].pid, " on ", host, ") is stopped (SIGSTOP or a debugger)"));
    }
  }
  if (!gone.empty()) return StrJoin(gone, ", ");
  if (!remote.empty())
    return StrCat("no worker on this host (", host, ") has exited; one of ranks ", StrJoin(remote, ", "),
                  " on other hosts has died or hangs");
  return "every worker is still running: one of them hangs or is far slower (raise --collective_timeout_s if a "
         "step legitimately takes that long)";
}

Status MpiCollective::PollUntil(const std::function<StatusOr<bool>()>& poll, std::string_view what) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(options_.timeout_s);
  // Poll without pause for the first 50 us (latency), then yield the core between polls (workers may share cores)
  // until kYieldFor has passed, then sleep 100 us between polls. The phases are measured in time, not polls: a
  // sched_yield returns in about 0.5 us when no other thread wants the core, so the 1,800 yields this loop used to
  // make before sleeping lasted about 1 ms: a wait for a worker 1 ms behind (a step's imbalance) then slept. A
  // sleeping worker makes no MPI progress, and its peer, whose rendezvous needs it, waits for it to wake (100 us
  // plus the kernel's timer slack, often more). Past kYieldFor (a worker far behind, a checkpoint, validation) it
  // sleeps, so that a long wait does not keep a core busy.
  constexpr auto kSpinFor = std::chrono::microseconds(50);
  constexpr auto kYieldFor = std::chrono::milliseconds(20);
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(const bool done, poll());
    if (done) return Status::OK();
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline)
      return DeadlineExceededError(what, " did not complete within ", options_.timeout_s,
                                   " s (--collective_timeout_s): ", DescribeMissing());
    if (now - start < kSpinFor) continue;
    if (now - start < kYieldFor) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

Status MpiCollective::WaitAll(void* requests, int n, std::string_view what) {
  MPI_Request* reqs = static_cast<MPI_Request*>(requests);
  return PollUntil(
      [&]() -> StatusOr<bool> {
        int done = 0;
        STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE), "MPI_Testall", what));
        return done != 0;
      },
      what);
}

// The sums (or, with scale 1/size, the means) of buckets of floats, reduced in place across the workers. Each bucket
// is cut into pieces of at most chunk_bytes, each its own non-blocking reduction, all in flight together
// (MPI_Iallreduce with MPI_SUM; under `deterministic`, MPI_Ireduce with the rank-ordered sum to rank 0, then
// MPI_Ibcast of rank 0's bits). Progress scales every piece that every rank holds as soon as it sees it complete,
// while the piece is still in cache, instead of in one more pass over all the floats at the end.
//
// Every worker must make the same MPI calls in the same order: pieces start in bucket order (Start, called at the
// same point of the step on every worker); under `deterministic` the broadcasts start only in Finish, after every
// bucket has started, in piece order, each once its own and every earlier piece's reduction is complete. The cut
// is the same on every worker and in both of the Trainer's paths (overlapped or not), so both give the same bits.
// Under `deterministic` the pieces change no bit at all (rank-order sums); under MPI_SUM with more than 2 ranks the
// order of an element's additions is the allreduce algorithm's, and ring's depends on where the element falls in
// its piece: another chunk_bytes may change the last bits.
class MpiCollective::Chunked {
 public:
  Chunked(MpiCollective* c, float scale, std::string_view what) : c_(c), scale_(scale), what_(what) {}
  Chunked(const Chunked&) = delete;
  Chunked& operator=(const Chunked&) = delete;

  // Starts the reduction of the `n` floats at `data` (in place) as the next bucket.
  Status Start(float* data, int64_t n) {
    const int64_t piece =  // a multiple of 16 floats (64 bytes), within MPI's int count
        std::clamp<int64_t>(c_->options_.chunk_bytes / 4 / 16 * 16, 16, INT_MAX / 16 * 16);
    first_piece_.push_back(pieces_.size());
    for (int64_t off = 0; off < n; off += piece) {
      const int count = static_cast<int>(std::min(piece, n - off));
      pieces_.push_back({data + off, count, kReducing});
      reqs_.push_back(MPI_REQUEST_NULL);
      MPI_Request* req = &reqs_.back();
      const int rc = c_->options_.deterministic
                         ? MPI_Ireduce(c_->rank_ == 0 ? MPI_IN_PLACE : data + off, data + off, count, MPI_FLOAT,
                                       OrderedSumOp(), 0, MPI_COMM_WORLD, req)
                         : MPI_Iallreduce(MPI_IN_PLACE, data + off, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req);
      STRATA_RETURN_IF_ERROR(MpiStatus(rc, c_->options_.deterministic ? "MPI_Ireduce" : "MPI_Iallreduce", what_));
    }
    return Status::OK();
  }

  // Lets MPI progress and completes the pieces it has finished; true once every started piece is done (summed,
  // broadcast where deterministic, scaled).
  StatusOr<bool> Progress() { return Poll(/*finishing=*/false); }

  // Waits until every started piece is done.
  Status Finish() {
    return c_->PollUntil([this] { return Poll(/*finishing=*/true); }, what_);
  }

  // Whether every piece of bucket `b` is done.
  bool BucketDone(size_t b) const {
    const size_t end = b + 1 < first_piece_.size() ? first_piece_[b + 1] : pieces_.size();
    for (size_t i = first_piece_[b]; i < end; ++i)
      if (pieces_[i].phase != kDone) return false;
    return true;
  }

  // Requests still in flight (MPI may write into the buckets until they complete).
  bool InFlight() const {
    for (const MPI_Request& r : reqs_)
      if (r != MPI_REQUEST_NULL) return true;
    return false;
  }

 private:
  enum Phase : uint8_t { kReducing, kReduced, kBroadcasting, kDone };
  struct Piece {
    float* data;
    int count;
    Phase phase;
  };

  StatusOr<bool> Poll(bool finishing) {
    if (done_ < pieces_.size()) {
      int out = 0;
      indices_.resize(reqs_.size());
      STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Testsome(static_cast<int>(reqs_.size()), reqs_.data(), &out,
                                                    indices_.data(), MPI_STATUSES_IGNORE),
                                       "MPI_Testsome", what_));
      if (out == MPI_UNDEFINED) out = 0;  // no request active
      for (int k = 0; k < out; ++k) {
        Piece& p = pieces_[indices_[k]];
        if (p.phase == kReducing && c_->options_.deterministic) {
          p.phase = kReduced;  // rank 0 holds the sum; its broadcast starts in Finish, in piece order
        } else {
          Done(p);
        }
      }
    }
    if (finishing && c_->options_.deterministic) {
      for (; next_bcast_ < pieces_.size() && pieces_[next_bcast_].phase == kReduced; ++next_bcast_) {
        Piece& p = pieces_[next_bcast_];
        p.phase = kBroadcasting;
        STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Ibcast(p.data, p.count, MPI_FLOAT, 0, MPI_COMM_WORLD, &reqs_[next_bcast_]),
                                         "MPI_Ibcast", what_));
      }
    }
    return done_ == pieces_.size();
  }

  void Done(Piece& p) {
    if (scale_ != 1.0f)
      for (float *q = p.data, *e = p.data + p.count; q < e; ++q) *q *= scale_;
    p.phase = kDone;
    ++done_;
  }

  MpiCollective* c_;
  float scale_;
  std::string what_;
  std::vector<Piece> pieces_;
  std::vector<MPI_Request> reqs_;    // one per piece; MPI_REQUEST_NULL once complete
  std::vector<size_t> first_piece_;  // bucket -> its first piece
  std::vector<int> indices_;         // MPI_Testsome's output
  size_t done_ = 0;
  size_t next_bcast_ = 0;  // deterministic: the first piece whose broadcast has not started
};

Status MpiCollective::AllReduceMean(const std::vector<Tensor*>& tensors, std::string_view what) {
  return ReduceTensors(tensors, 1.0f / static_cast<float>(size_), what);
}

Status MpiCollective::AllReduceSum(const std::vector<Tensor*>& tensors, std::string_view what) {
  return ReduceTensors(tensors, 1.0f, what);
}

Status MpiCollective::ReduceTensors(const std::vector<Tensor*>& tensors, float scale, std::string_view what) {
  if (size_ == 1) return Status::OK();
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i]->dtype() != DType::kFloat32)
      return InvalidArgumentError(what, ": tensor ", i, " is ", tensors[i]->TypeString(), "; only float32 is reduced");
    sizes.push_back(tensors[i]->num_elements());
  }
  const std::vector<std::pair<size_t, size_t>> buckets = PlanBuckets(sizes, options_.bucket_bytes);
  if (buffers_.size() < buckets.size()) buffers_.resize(buckets.size());
  std::vector<float*> data(buckets.size());  // each bucket's contiguous floats
  std::vector<std::vector<int64_t>> offsets(buckets.size());
  Chunked reduction(this, scale, what);
  for (size_t b = 0; b < buckets.size(); ++b) {
    const int64_t n = BucketLayout(sizes, buckets[b].first, buckets[b].second, &offsets[b]);
    if (buckets[b].second - buckets[b].first == 1) {
      // A bucket of one tensor is reduced in a copy of it, which then replaces it (the caller's buffer, which a
      // session may share, is never written).
      Tensor& t = *tensors[buckets[b].first];
      t = t.Clone();
      data[b] = t.data<float>();
    } else {
      std::vector<float>& buf = buffers_[b];
      buf.resize(n);
      for (size_t i = buckets[b].first; i < buckets[b].second; ++i)
        std::memcpy(buf.data() + offsets[b][i - buckets[b].first], tensors[i]->data<float>(), tensors[i]->byte_size());
      data[b] = buf.data();
    }
    // Started as soon as it is packed; the next bucket is packed while it travels.
    STRATA_RETURN_IF_ERROR(reduction.Start(data[b], n));
    STRATA_RETURN_IF_ERROR(reduction.Progress().status());
  }
  const auto t0 = std::chrono::steady_clock::now();
  STRATA_RETURN_IF_ERROR(reduction.Finish());
  last_wait_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t b = 0; b < buckets.size(); ++b) {  // the means of fused buckets into new tensors that replace them
    if (buckets[b].second - buckets[b].first == 1) continue;
    for (size_t i = buckets[b].first; i < buckets[b].second; ++i) {
      Tensor out = Tensor::Empty(DType::kFloat32, tensors[i]->shape());
      std::memcpy(out.data<float>(), data[b] + offsets[b][i - buckets[b].first], out.byte_size());
      *tensors[i] = std::move(out);
    }
  }
  return Status::OK();
}

// StartAllReduceMean's reduction: the tensors are copied into the collective's bucket buffers as they are added.
class MpiCollective::Pending final : public PendingAllReduce {
 public:
  Pending(MpiCollective* c, const std::vector<Shape>& shapes, float scale, std::string_view what)
      : c_(c), shapes_(shapes), what_(what), reduction_(c, scale, what) {}
  ~Pending() override {
    // Abandoned with reductions in flight (an error mid-step): MPI may still write into the bucket buffers, so they
    // stay as they are and the collective refuses another overlapped reduction.
    if (reduction_.InFlight()) c_->pending_abandoned_ = true;
    c_->pending_active_ = false;
  }

  Status Init() {
    std::vector<int64_t> sizes;
    for (const Shape& s : shapes_) sizes.push_back(s.NumElements());
    buckets_ = PlanBuckets(sizes, c_->options_.bucket_bytes);
    std::vector<SharedBucket>& bufs = c_->pending_buffers_;
    if (bufs.size() < buckets_.size()) bufs.resize(buckets_.size());
    place_.resize(shapes_.size());
    for (size_t b = 0; b < buckets_.size(); ++b) {
      std::vector<int64_t> offsets;
      const int64_t n = BucketLayout(sizes, buckets_[b].first, buckets_[b].second, &offsets);
      for (size_t i = buckets_[b].first; i < buckets_[b].second; ++i) place_[i] = {b, offsets[i - buckets_[b].first]};
      SharedBucket& buf = bufs[b];
      if (buf.data == nullptr || buf.capacity < n || buf.data.use_count() > 1) {  // views of it may still be read
        const int64_t capacity = (n + 15) / 16 * 16 + 16;  // a multiple of 64 bytes, as aligned_alloc wants
        void* p = std::aligned_alloc(64, static_cast<size_t>(capacity) * sizeof(float));
        if (p == nullptr) return ResourceExhaustedError(what_, ": no memory for a bucket of ", n, " floats");
        std::memset(p, 0, static_cast<size_t>(capacity) * sizeof(float));
        buf.data = std::shared_ptr<float>(static_cast<float*>(p), [](float* q) { std::free(q); });
        buf.capacity = capacity;
      }
      keep_.push_back(buf.data);
      data_.push_back(buf.data.get());
      counts_.push_back(n);
      missing_.push_back(buckets_[b].second - buckets_[b].first);
    }
    added_.assign(shapes_.size(), 0);
    return Status::OK();
  }

  Status Add(size_t i, const Tensor& value) override {
    if (i >= shapes_.size())
      return InvalidArgumentError(what_, ": tensor ", i, " added, but only ", shapes_.size(), " were announced");
    if (value.dtype() != DType::kFloat32 || value.shape() != shapes_[i])
      return InvalidArgumentError(what_, ": tensor ", i, " must be float32", shapes_[i].ToString(), ", got ",
                                  value.TypeString());
    if (added_[i]) return Status::OK();
    added_[i] = 1;
    ++added_count_;
    const auto [b, off] = place_[i];
    std::memcpy(data_[b] + off, value.data<float>(), value.byte_size());
    --missing_[b];
    // In bucket order, so that every worker starts the same reductions in the same order.
    while (started_ < buckets_.size() && missing_[started_] == 0) {
      STRATA_RETURN_IF_ERROR(reduction_.Start(data_[started_], counts_[started_]));
      ++started_;
      if (added_count_ < added_.size()) ++c_->overlap_stats_.started_early;
    }
    return Test();
  }

  Status Test() override {
    if (started_ == 0) return Status::OK();
    return reduction_.Progress().status();
  }

  StatusOr<std::vector<Tensor>> Wait() override {
    if (started_ < buckets_.size()) {
      for (size_t i = 0; i < added_.size(); ++i)
        if (!added_[i])
          return FailedPreconditionError(what_, ": tensor ", i, " (", shapes_[i].ToString(), ") was never added");
    }
    c_->overlap_stats_.buckets += static_cast<int64_t>(buckets_.size());
    for (size_t b = 0; b < started_; ++b) c_->overlap_stats_.done_before_wait += reduction_.BucketDone(b);
    STRATA_RETURN_IF_ERROR(reduction_.Finish());  // the sums, every piece scaled (means) as it arrived
    std::vector<Tensor> means;
    means.reserve(shapes_.size());
    for (size_t i = 0; i < shapes_.size(); ++i)
      means.push_back(Tensor::Wrap(DType::kFloat32, shapes_[i], data_[place_[i].first] + place_[i].second,
                                   std::shared_ptr<void>(keep_[place_[i].first])));
    return means;
  }

 private:
  MpiCollective* c_;
  std::vector<Shape> shapes_;
  std::string what_;
  Chunked reduction_;
  std::vector<std::pair<size_t, size_t>> buckets_;
  std::vector<std::pair<size_t, int64_t>> place_;  // tensor -> (bucket, offset in its buffer)
  std::vector<std::shared_ptr<float>> keep_;  // the bucket buffers, held while this reduction lives
  std::vector<float*> data_;
  std::vector<int64_t> counts_;
  std::vector<size_t> missing_;  // tensors each bucket still waits for
  std::vector<uint8_t> added_;
  size_t started_ = 0;  // buckets [0, started_) are in flight
  size_t added_count_ = 0;
};

StatusOr<std::unique_ptr<PendingAllReduce>> MpiCollective::StartAllReduceMean(const std::vector<Shape>& shapes,
                                                                               std::string_view what) {
  if (size_ == 1) return Collective::StartAllReduceMean(shapes, what);
  return StartReduction(shapes, 1.0f / static_cast<float>(size_), what);
}

StatusOr<std::unique_ptr<PendingAllReduce>> MpiCollective::StartAllReduceSum(const std::vector<Shape>& shapes,
                                                                              std::string_view what) {
  if (size_ == 1) return Collective::StartAllReduceSum(shapes, what);
  return StartReduction(shapes, 1.0f, what);
}

StatusOr<std::unique_ptr<PendingAllReduce>> MpiCollective::StartReduction(const std::vector<Shape>& shapes,
                                                                          float scale, std::string_view what) {
  if (pending_active_)
    return FailedPreconditionError(what, ": another overlapped reduction is still in progress (one at a time)");
  if (pending_abandoned_)
    return FailedPreconditionError(what, ": an earlier overlapped reduction was abandoned with reductions in flight "
                                   "(after an error); this collective cannot start another: restart the workers");
  auto p = std::make_unique<Pending>(this, shapes, scale, what);
  pending_active_ = true;
  STRATA_RETURN_IF_ERROR(p->Init());
  return std::unique_ptr<PendingAllReduce>(std::move(p));
}

Status MpiCollective::AllReduceSum(float* data, int64_t n, std::string_view what) {
  if (size_ == 1 || n == 0) return Status::OK();
  Chunked reduction(this, 1.0f, what);
  STRATA_RETURN_IF_ERROR(reduction.Start(data, n));
  return reduction.Finish();
}

Status MpiCollective::Broadcast(const std::vector<Tensor*>& tensors, int root, std::string_view what) {
  if (size_ == 1) return Status::OK();
  std::vector<MPI_Request> reqs;
  for (Tensor* t : tensors) {
    if (t->dtype() == DType::kString) return InvalidArgumentError(what, ": string tensors are not broadcast");
    if (t->byte_size() > static_cast<size_t>(INT_MAX))
      return InvalidArgumentError(what, ": a tensor of ", t->byte_size(), " bytes is more than MPI's int count");
    if (rank_ != root) *t = Tensor::Empty(t->dtype(), t->shape());  // never write into storage others share
    reqs.emplace_back();
    STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Ibcast(t->raw_data(), static_cast<int>(t->byte_size()), MPI_BYTE, root,
                                                MPI_COMM_WORLD, &reqs.back()),
                                     "MPI_Ibcast", what));
  }
  return WaitAll(reqs.data(), static_cast<int>(reqs.size()), what);
}

Status MpiCollective::AllReduceMean(std::vector<double>* values, std::string_view what) {
  if (size_ == 1 || values->empty()) return Status::OK();
  MPI_Request req;
  const MPI_Op op = MPI_SUM;
  if (options_.deterministic) {  // in rank order on rank 0, then its bits everywhere
    std::vector<double> sums(values->size());
    std::vector<double> gathered(values->size() * size_);
    STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Iallgather(values->data(), static_cast<int>(values->size()), MPI_DOUBLE,
                                                    gathered.data(), static_cast<int>(values->size()), MPI_DOUBLE,
                                                    MPI_COMM_WORLD, &req),
                                     "MPI_Iallgather", what));
    STRATA_RETURN_IF_ERROR(WaitAll(&req, 1, what));
    for (size_t i = 0; i < values->size(); ++i) {
      double s = 0;
      for (int r = 0; r < size_; ++r) s += gathered[r * values->size() + i];
      (*values)[i] = s / size_;
    }
    return Status::OK();
  }
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Iallreduce(MPI_IN_PLACE, values->data(), static_cast<int>(values->size()),
                                                  MPI_DOUBLE, op, MPI_COMM_WORLD, &req),
                                   "MPI_Iallreduce", what));
  STRATA_RETURN_IF_ERROR(WaitAll(&req, 1, what));
  for (double& v : *values) v /= size_;
  return Status::OK();
}

Status MpiCollective::AllReduceMin(int64_t* value, std::string_view what) {
  if (size_ == 1) return Status::OK();
  MPI_Request req;
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Iallreduce(MPI_IN_PLACE, value, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD, &req),
                                   "MPI_Iallreduce", what));
  return WaitAll(&req, 1, what);
}

Status MpiCollective::Barrier(std::string_view what) {
  if (size_ == 1) return Status::OK();
  MPI_Request req;
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier", what));
  return WaitAll(&req, 1, what);
}

Status MpiCollective::CheckSame(const std::string& value, std::string_view what) {
  // 64-bit FNV-1a digests, gathered everywhere: every rank reaches the same verdict.
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : value) h = (h ^ ch) * 1099511628211ULL;
  std::vector<uint64_t> all(size_);
  MPI_Request req;
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Iallgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD,
                                                  &req),
                                   "MPI_Iallgather", what));
  STRATA_RETURN_IF_ERROR(WaitAll(&req, 1, what));
  std::vector<std::string> differ;
  for (int r = 1; r < size_; ++r)
    if (all[r] != all[0]) differ.push_back(StrCat(r));
  if (differ.empty()) return Status::OK();
  return FailedPreconditionError(what, " of rank", differ.size() > 1 ? "s " : " ", StrJoin(differ, ", "),
                                 " differ", differ.size() > 1 ? "" : "s", " from rank 0's",
                                 rank_ == 0 ? "" : StrCat(" (this is rank ", rank_, ": ", value, ")"),
                                 "; every worker must run the same model on the same data version with the same flags");
}

void MpiCollective::Abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  // Give the launcher a moment to forward this error (and the other workers' own) before it kills every worker.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  // MPI_Abort asks the launcher to end every worker; should it hang with a broken peer, exit anyway.
  std::thread([code] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    std::_Exit(code);
  }).detach();
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

Status BroadcastTrainingState(Collective& c, TrainingState* state) {
  if (c.size() == 1) return Status::OK();
  Tensor counters = Tensor::Empty(DType::kInt64, Shape({4}));
  Tensor lr = Tensor::Empty(DType::kFloat64, Shape({1}));
  int64_t* k = counters.data<int64_t>();
  k[0] = state->iterations;
  k[1] = state->epoch;
  k[2] = state->batch;
  k[3] = state->learning_rate_override.has_value();
  lr.data<double>()[0] = state->learning_rate_override.value_or(0.0);
  std::vector<Tensor*> all = {&counters, &lr};
  for (auto& [name, t] : state->weights) all.push_back(&t);
  for (auto& [name, t] : state->slots) all.push_back(&t);
  STRATA_RETURN_IF_ERROR(c.Broadcast(all, 0, "the training state"));
  k = counters.data<int64_t>();  // Broadcast may have replaced the storage
  state->iterations = k[0];
  state->epoch = static_cast<int>(k[1]);
  state->batch = k[2];
  state->learning_rate_override.reset();
  if (k[3]) state->learning_rate_override = lr.data<double>()[0];
  return Status::OK();
}

}  // namespace strata::train
