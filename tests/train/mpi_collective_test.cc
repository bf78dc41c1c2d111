// MpiCollective's overlapped reduction under mpirun (2 or more ranks; tests/CMakeLists.txt runs it with 2):
// - the means are exact for values whose sums are exact, and equal, bit for bit, those of the non-overlapped
//   AllReduceMean over the same tensors (fused buckets of several tensors, and tensors of a bucket of their own);
// - Wait hands out views of the bucket buffers: 64-byte aligned, and the next reduction reuses a buffer (no
//   allocation per step) unless a view of it is still held, which then keeps its values;
// - buckets cut into many pieces (1 KiB here: the 1 MiB tensor travels as 1,024 reductions in flight together, each
//   scaled as it arrives) give the means an independent reference computes from every rank's values (MPI_Allgather),
//   plain and deterministic, and the same bits as the default 1 MiB pieces;
// - AllReduceSum and StartAllReduceSum (the trainer's) give the exact sums, overlapped bit for bit non-overlapped.
// Exits 0 when every check passed on every rank, 1 otherwise (each failure printed with the rank).
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "train/distributed.h"

namespace {

int failures = 0;
int rank = 0;

void Check(bool ok, const char* what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what);
}

// Tensors of `shapes` with values that depend on the rank, the tensor, the element and the round.
std::vector<strata::Tensor> Values(const std::vector<strata::Shape>& shapes, int round, bool exact) {
  std::vector<strata::Tensor> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    strata::Tensor t = strata::Tensor::Empty(strata::DType::kFloat32, shapes[i]);
    float* p = t.data<float>();
    for (int64_t k = 0; k < t.num_elements(); ++k)
      p[k] = exact ? static_cast<float>((rank + 1) * (k % 7 + 1) + 100 * round + static_cast<int64_t>(i))
                   : 1.0f / static_cast<float>(3 + rank + k % 11 + round) + 1e-3f * static_cast<float>(i);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

int main() {
  using strata::DType;
  using strata::Shape;
  using strata::Tensor;
  strata::train::MpiOptions options;
  options.bucket_bytes = 4 << 10;  // small buckets: several fused buckets of several tensors
  options.chunk_bytes = 1 << 10;   // and small pieces: many reductions in flight per bucket
  auto created = strata::train::MpiCollective::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
    return 1;
  }
  strata::train::MpiCollective& c = **created;
  rank = c.rank();
  const int n = c.size();
  // 0. The buckets' allreduce algorithm, as Open MPI itself reports it: ring unless the user chose one
  //    (mpi_collective.sh also runs this with OMPI_MCA_coll_libnbc_iallreduce_algorithm set and says what to expect).
  {
    const char* expect = std::getenv("STRATA_EXPECT_IALLREDUCE");
    const std::string want = expect != nullptr ? expect : "ring";
    const std::string got = strata::train::MpiCollective::IallreduceAlgorithm();
    if (got != want) std::fprintf(stderr, "rank %d: Open MPI's iallreduce algorithm is '%s', expected '%s'\n", rank,
                                  got.c_str(), want.c_str());
    Check(got == want, "the gradient allreduce algorithm");
  }
  // Odd sizes, so that fused tensors do not end on 64-byte boundaries; one of 1 MiB, a bucket of its own.
  const std::vector<Shape> shapes = {Shape({3}),  Shape({5, 7}),      Shape({300}),
                                     Shape({17}), Shape({256 << 10}), Shape({2, 9})};

  // 1. Exact means: rank r holds (r + 1) * (k % 7 + 1) + 100 * round + i, whose mean over n ranks is
  //    (n + 1) / 2 * (k % 7 + 1) + 100 * round + i (exact in float for n = 2: halves).
  std::vector<Tensor> held;  // round 0's means, kept across round 1
  std::vector<const float*> round0_data;
  for (int round = 0; round < 3; ++round) {
    auto pending = c.StartAllReduceMean(shapes, "test");
    Check(pending.ok(), "StartAllReduceMean");
    if (!pending.ok()) break;
    std::vector<Tensor> values = Values(shapes, round, /*exact=*/true);
    for (size_t i = shapes.size(); i-- > 0;) Check((*pending)->Add(i, values[i]).ok(), "Add");
    auto means = (*pending)->Wait();
    Check(means.ok(), "Wait");
    if (!means.ok()) break;
    bool exact = true, aligned = true;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const float* p = (*means)[i].data<float>();
      aligned = aligned && reinterpret_cast<uintptr_t>(p) % 64 == 0;
      for (int64_t k = 0; k < (*means)[i].num_elements(); ++k) {
        const double want = (n + 1) / 2.0 * (k % 7 + 1) + 100 * round + static_cast<double>(i);
        exact = exact && p[k] == static_cast<float>(want);
      }
    }
    Check(exact, "the means are the exact means of the ranks' values");
    // Tensors 0-3 share a fused bucket (4 KiB buckets): views at 16-float (64-byte) steps, not copies.
    const float* base = (*means)[0].data<float>();
    Check((*means)[1].data<float>() == base + 16 && (*means)[2].data<float>() == base + 16 + 48 &&
              (*means)[3].data<float>() == base + 16 + 48 + 304,
          "the means of a fused bucket are views into one buffer");
    Check(aligned, "every mean is a 64-byte aligned view");
    if (round == 0) {
      held = *means;  // round 1 runs while these are held
      for (const Tensor& t : held) round0_data.push_back(t.data<float>());
    }
    if (round == 1) {
      bool kept = true, moved = true;
      for (size_t i = 0; i < shapes.size(); ++i) {
        const float* p = held[i].data<float>();
        for (int64_t k = 0; k < held[i].num_elements(); ++k)
          kept = kept && p[k] == static_cast<float>((n + 1) / 2.0 * (k % 7 + 1) + static_cast<double>(i));
        moved = moved && (*means)[i].data<float>() != round0_data[i];
      }
      Check(kept, "a mean held across the next reduction keeps its values");
      Check(moved, "the next reduction writes elsewhere while a view is held");
      held.clear();
      round0_data.clear();
      for (const Tensor& t : *means) round0_data.push_back(t.data<float>());
    }
    if (round == 2) {
      bool reused = true;
      for (size_t i = 0; i < shapes.size(); ++i) reused = reused && (*means)[i].data<float>() == round0_data[i];
      Check(reused, "with no view held, the next reduction reuses the bucket buffers");
    }
  }

  // 2. Bit for bit the non-overlapped AllReduceMean (inexact values), plain and deterministic.
  for (bool deterministic : {false, true}) {
    c.set_deterministic(deterministic);
    std::vector<Tensor> plain = Values(shapes, 5, /*exact=*/false);
    std::vector<Tensor*> ptrs;
    for (Tensor& t : plain) ptrs.push_back(&t);
    Check(c.AllReduceMean(ptrs, "test").ok(), "AllReduceMean");
    auto pending = c.StartAllReduceMean(shapes, "test");
    Check(pending.ok(), "StartAllReduceMean");
    if (!pending.ok()) break;
    std::vector<Tensor> values = Values(shapes, 5, /*exact=*/false);
    for (size_t i = 0; i < shapes.size(); ++i) Check((*pending)->Add(i, values[i]).ok(), "Add");
    auto means = (*pending)->Wait();
    Check(means.ok(), "Wait");
    if (!means.ok()) break;
    bool same = true;
    for (size_t i = 0; i < shapes.size(); ++i)
      same = same && std::memcmp((*means)[i].raw_data(), plain[i].raw_data(), plain[i].byte_size()) == 0;
    Check(same, deterministic ? "overlapped means == AllReduceMean's, bitwise (deterministic)"
                              : "overlapped means == AllReduceMean's, bitwise (MPI_SUM)");
  }
  // 3. The pieces against an independent reference: every rank's values gathered, summed in rank order, times 1/n
  //    (what the collective computes: exact for 2 ranks, whatever MPI's order; within 1e-6 relative otherwise), and
  //    the same bits with the default 1 MiB pieces (a second collective) where the order of the additions cannot
  //    depend on the cut: deterministic (rank order), or 2 ranks. With more ranks under MPI_SUM, ring allreduce adds
  //    an element's values in an order that depends on where it falls in its piece: within 1e-6 relative there.
  strata::train::MpiOptions big = options;
  big.chunk_bytes = strata::train::MpiOptions().chunk_bytes;
  auto created_big = strata::train::MpiCollective::Create(big);
  Check(created_big.ok(), "a second collective with the default pieces");
  for (bool deterministic : {false, true}) {
    if (!created_big.ok()) break;
    c.set_deterministic(deterministic);
    (*created_big)->set_deterministic(deterministic);
    std::vector<Tensor> small_pieces = Values(shapes, 7, /*exact=*/false);
    std::vector<Tensor> big_pieces = Values(shapes, 7, /*exact=*/false);
    const std::vector<Tensor> mine = Values(shapes, 7, /*exact=*/false);
    std::vector<Tensor*> a, b;
    for (Tensor& t : small_pieces) a.push_back(&t);
    for (Tensor& t : big_pieces) b.push_back(&t);
    Check(c.AllReduceMean(a, "test").ok(), "AllReduceMean in 1 KiB pieces");
    Check((*created_big)->AllReduceMean(b, "test").ok(), "AllReduceMean in 1 MiB pieces");
    bool right = true, same = true;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const int64_t count = mine[i].num_elements();
      std::vector<float> everyone(count * n);
      MPI_Allgather(mine[i].data<float>(), static_cast<int>(count), MPI_FLOAT, everyone.data(), static_cast<int>(count),
                    MPI_FLOAT, MPI_COMM_WORLD);
      const float* got = small_pieces[i].data<float>();
      for (int64_t k = 0; k < count; ++k) {
        float sum = 0;
        for (int r = 0; r < n; ++r) sum += everyone[r * count + k];
        const float want = sum * (1.0f / static_cast<float>(n));
        right = right && (n == 2 ? got[k] == want : std::abs(got[k] - want) <= 1e-6f * std::abs(want));
      }
      if (deterministic || n == 2) {
        same = same && std::memcmp(small_pieces[i].raw_data(), big_pieces[i].raw_data(), mine[i].byte_size()) == 0;
      } else {
        const float* other = big_pieces[i].data<float>();
        for (int64_t k = 0; k < count; ++k) same = same && std::abs(got[k] - other[k]) <= 1e-6f * std::abs(other[k]);
      }
    }
    Check(right, deterministic ? "means in 1 KiB pieces == the reference (deterministic)"
                               : "means in 1 KiB pieces == the reference (MPI_SUM)");
    Check(same, deterministic ? "1 KiB pieces == 1 MiB pieces, bitwise (deterministic)"
                : n == 2      ? "1 KiB pieces == 1 MiB pieces, bitwise (MPI_SUM, 2 ranks)"
                              : "1 KiB pieces == 1 MiB pieces within 1e-6 (MPI_SUM, ring order)");
  }

  // 4. The sums (the trainer's reduction: its gradient graph divides by the workers): exact for exact values, and the
  //    overlapped ones bit for bit the non-overlapped ones.
  for (bool deterministic : {false, true}) {
    c.set_deterministic(deterministic);
    std::vector<Tensor> plain = Values(shapes, 9, /*exact=*/true);
    const std::vector<Tensor> given = plain;  // the same buffers: a session's, which the reduction must not write
    std::vector<Tensor*> ptrs;
    for (Tensor& t : plain) ptrs.push_back(&t);
    Check(c.AllReduceSum(ptrs, "test").ok(), "AllReduceSum of tensors");
    {
      const std::vector<Tensor> fresh = Values(shapes, 9, /*exact=*/true);
      bool untouched = true, replaced = true;
      for (size_t i = 0; i < shapes.size(); ++i) {
        untouched = untouched && std::memcmp(given[i].raw_data(), fresh[i].raw_data(), fresh[i].byte_size()) == 0;
        replaced = replaced && plain[i].raw_data() != given[i].raw_data();
      }
      Check(untouched, "AllReduceSum leaves the buffers it was given as they were (fused and lone buckets)");
      Check(replaced, "AllReduceSum replaces every tensor by a new one");
    }
    auto pending = c.StartAllReduceSum(shapes, "test");
    Check(pending.ok(), "StartAllReduceSum");
    if (!pending.ok()) break;
    std::vector<Tensor> values = Values(shapes, 9, /*exact=*/true);
    for (size_t i = 0; i < shapes.size(); ++i) Check((*pending)->Add(i, values[i]).ok(), "Add");
    auto sums = (*pending)->Wait();
    Check(sums.ok(), "Wait");
    if (!sums.ok()) break;
    bool exact = true, same = true;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const float* p = plain[i].data<float>();
      for (int64_t k = 0; k < plain[i].num_elements(); ++k)  // sum over r of (r + 1) * (k % 7 + 1) + 900 + i
        exact =
            exact && p[k] == static_cast<float>(n * (n + 1) / 2 * (k % 7 + 1) + n * (900 + static_cast<int64_t>(i)));
      same = same && std::memcmp((*sums)[i].raw_data(), plain[i].raw_data(), plain[i].byte_size()) == 0;
    }
    Check(exact,
          deterministic ? "AllReduceSum gives the exact sums (deterministic)" : "AllReduceSum gives the exact sums");
    Check(same, deterministic ? "overlapped sums == AllReduceSum's, bitwise (deterministic)"
                              : "overlapped sums == AllReduceSum's, bitwise (MPI_SUM)");
  }

  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %d failed checks over %d ranks\n", all == 0 ? "PASS" : "FAIL", all, n);
  return all == 0 ? 0 : 1;
}
