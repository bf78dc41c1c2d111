// allreduce_bench (issue 14): the bandwidth of the Trainer's bucketed gradient reduction against one plain blocking
// MPI_Allreduce of the same bytes in one buffer. Bus bandwidth as NCCL reports it: 2 (n-1)/n x bytes / time.
// The Trainer sums (its gradient graph divides the loss by the number of workers, so the sums are the means), as
// MPI_Allreduce(MPI_SUM) does. Three bucketed figures:
// - AllReduceSum: a model's worth of tensors fused into bucket_mb buckets (tensors of 1 MiB or more alone, reduced
//   where they lie), each bucket as non-blocking reductions of chunk_mb pieces: the Trainer's path without
//   --allreduce_overlap;
// - overlapped: StartAllReduceSum, then Add of every tensor (in the order given, as the Trainer gives the gradients
//   in the order backward produces them), then Wait: the Trainer's default path, which copies every gradient into
//   the collective's bucket buffers as the backward pass hands it over. Timed twice: with the tensors cold in memory,
//   and with each rewritten, untimed, just before its Add, as a kernel writes a gradient just before the backward
//   pass hands it over.
// Every round rewrites the tensors (untimed) and checks the sums, so a wrong reduction is never a fast one.
//
//   mpirun --oversubscribe -np 2 build/bench/allreduce_bench [total_mb=100] [tensor_mb=4] [bucket_mb=25]
//       [rounds=10] [chunk_mb=1]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "train/distributed.h"

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Fail(const strata::Status& s) {
  std::fprintf(stderr, "allreduce_bench: %s\n", s.message().c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  using strata::Tensor;
  const double total_mb = argc > 1 ? std::atof(argv[1]) : 100;
  const double tensor_mb = argc > 2 ? std::atof(argv[2]) : 4;
  const double bucket_mb = argc > 3 ? std::atof(argv[3]) : 25;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 10;
  const double chunk_mb = argc > 5 ? std::atof(argv[5]) : 1;
  strata::train::MpiOptions options;
  options.bucket_bytes = static_cast<int64_t>(bucket_mb * (1 << 20));
  options.chunk_bytes = static_cast<int64_t>(chunk_mb * (1 << 20));
  options.timeout_s = 600;
  auto c = strata::train::MpiCollective::Create(options);
  if (!c.ok()) Fail(c.status());
  const int n = (*c)->size();
  const float mine = 1.0f + (*c)->rank(), want = n * (n + 1) / 2.0f;  // every value's sum over the ranks
  const int64_t total = static_cast<int64_t>(total_mb * (1 << 20) / 4);
  const int64_t per = std::max<int64_t>(1, static_cast<int64_t>(tensor_mb * (1 << 20) / 4));
  std::vector<Tensor> tensors;
  std::vector<strata::Shape> shapes;
  for (int64_t done = 0; done < total; done += per) {
    tensors.push_back(Tensor::Zeros(strata::DType::kFloat32, strata::Shape({std::min(per, total - done)})));
    shapes.push_back(tensors.back().shape());
  }
  std::vector<Tensor*> ptrs;
  for (Tensor& t : tensors) ptrs.push_back(&t);
  auto fill = [&](Tensor& t) { std::fill_n(t.data<float>(), t.num_elements(), mine); };
  auto check = [&](const std::vector<Tensor>& got, const char* path) {
    for (const Tensor& t : got)
      if (t.data<float>()[0] != want || t.data<float>()[t.num_elements() - 1] != want) {
        std::fprintf(stderr, "allreduce_bench: %s: wrong sum %g, want %g\n", path, t.data<float>()[0], want);
        std::exit(1);
      }
  };
  std::vector<float> plain(total);

  // The overlapped path; with `hot`, each tensor is rewritten (untimed) just before its Add.
  auto overlapped = [&](bool hot) -> double {
    for (Tensor& t : tensors) fill(t);
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = 0;
    auto t0 = std::chrono::steady_clock::now();
    auto pending = (*c)->StartAllReduceSum(shapes, "bench");
    if (!pending.ok()) Fail(pending.status());
    for (size_t i = 0; i < tensors.size(); ++i) {  // in bucket order, as the backward pass hands gradients over
      if (hot) {
        seconds += Seconds(t0);
        fill(tensors[i]);
        t0 = std::chrono::steady_clock::now();
      }
      if (auto s = (*pending)->Add(i, tensors[i]); !s.ok()) Fail(s);
    }
    auto sums = (*pending)->Wait();
    if (!sums.ok()) Fail(sums.status());
    seconds += Seconds(t0);
    check(*sums, hot ? "overlapped (hot)" : "overlapped");
    return seconds;
  };

  std::vector<double> bucketed_s, overlapped_s, hot_s, plain_s;
  for (int r = 0; r < rounds + 1; ++r) {  // round 0 warms up
    for (Tensor& t : tensors) fill(t);
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = std::chrono::steady_clock::now();
    if (auto s = (*c)->AllReduceSum(ptrs, "bench"); !s.ok()) Fail(s);
    const double b = Seconds(t0);
    check(tensors, "AllReduceSum");
    const double o = overlapped(false);
    const double h = overlapped(true);
    std::fill(plain.begin(), plain.end(), mine);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = std::chrono::steady_clock::now();
    MPI_Allreduce(MPI_IN_PLACE, plain.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double p = Seconds(t0);
    if (plain[0] != want || plain[total - 1] != want) {
      std::fprintf(stderr, "allreduce_bench: MPI_Allreduce: wrong sum %g, want %g\n", plain[0], want);
      return 1;
    }
    if (r > 0) bucketed_s.push_back(b), overlapped_s.push_back(o), hot_s.push_back(h), plain_s.push_back(p);
  }
  if ((*c)->rank() == 0) {
    const double bytes = static_cast<double>(total) * 4, bus = 2.0 * (n - 1) / n * bytes / 1e9;
    const double b = Median(bucketed_s), o = Median(overlapped_s), h = Median(hot_s), p = Median(plain_s);
    std::printf("%d ranks, %.0f MB in %zu tensors of %.2f MB, buckets of %.0f MB in pieces of %.2f MB, median of %d "
                "rounds\n", n, bytes / (1 << 20), tensors.size(), tensor_mb, bucket_mb, chunk_mb, rounds);
    std::printf("bucketed AllReduceSum:   %.1f ms, bus bandwidth %.2f GB/s\n", b * 1e3, bus / b);
    std::printf("overlapped (Add, Wait):  %.1f ms, bus bandwidth %.2f GB/s\n", o * 1e3, bus / o);
    std::printf("overlapped, hot tensors: %.1f ms, bus bandwidth %.2f GB/s\n", h * 1e3, bus / h);
    std::printf("plain MPI_Allreduce:     %.1f ms, bus bandwidth %.2f GB/s\n", p * 1e3, bus / p);
    std::printf("bucketed / plain bandwidth: %.2f\n", p / b);
    std::printf("overlapped / plain bandwidth: %.2f\n", p / o);
    std::printf("overlapped (hot) / plain bandwidth: %.2f\n", p / h);
  }
  return 0;
}
