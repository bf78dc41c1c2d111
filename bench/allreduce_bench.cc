// allreduce_bench (issue 14): the bandwidth of the Trainer's bucketed gradient averaging against one plain blocking
// MPI_Allreduce of the same bytes in one buffer. Bus bandwidth as NCCL reports it: 2 (n-1)/n x bytes / time.
// Two bucketed figures:
// - AllReduceMean: a model's worth of tensors fused into bucket_mb buckets (tensors of 1 MiB or more alone, reduced
//   where they lie), each bucket as non-blocking reductions of chunk_mb pieces, each piece scaled by 1/n as it
//   arrives: the Trainer's path without --overlap_allreduce;
// - overlapped: StartAllReduceMean, then Add of every tensor (in the order given, as the Trainer gives
//   the gradients in the order backward produces them), then Wait: the Trainer's default
//   path, which copies every gradient into the collective's bucket buffers as the backward pass hands it over
//   (timed twice: with the tensors cold in memory, and with each rewritten, untimed, just before its Add, as a kernel
//   writes a gradient just before the backward pass hands it over).
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
  if (!c.ok()) {
    std::fprintf(stderr, "allreduce_bench: %s\n", c.status().message().c_str());
    return 1;
  }
  const int n = (*c)->size();
  const int64_t total = static_cast<int64_t>(total_mb * (1 << 20) / 4);
  const int64_t per = std::max<int64_t>(1, static_cast<int64_t>(tensor_mb * (1 << 20) / 4));
  std::vector<Tensor> tensors;
  for (int64_t done = 0; done < total; done += per) {
    tensors.push_back(Tensor::Zeros(strata::DType::kFloat32, strata::Shape({std::min(per, total - done)})));
    std::fill_n(tensors.back().data<float>(), tensors.back().num_elements(), 1.0f + (*c)->rank());
  }
  std::vector<Tensor*> ptrs;
  for (Tensor& t : tensors) ptrs.push_back(&t);
  std::vector<float> plain(total, 1.0f + (*c)->rank());
  std::vector<strata::Shape> shapes;
  for (const Tensor& t : tensors) shapes.push_back(t.shape());
  std::vector<double> bucketed_s, overlapped_s, hot_s, plain_s;
  for (int r = 0; r < rounds + 1; ++r) {  // round 0 warms up
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = std::chrono::steady_clock::now();
    if (auto s = (*c)->AllReduceMean(ptrs, "bench"); !s.ok()) {
      std::fprintf(stderr, "allreduce_bench: %s\n", s.message().c_str());
      return 1;
    }
    const double b = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MPI_Barrier(MPI_COMM_WORLD);
    // The overlapped path, twice: the tensors as they are (cold: last written a reduction ago), then each rewritten
    // (same values) just before its Add, as a kernel writes a gradient just before the backward pass hands it over;
    // those writes are not timed.
    auto overlapped = [&](bool hot, std::vector<Tensor>* means) -> double {
      double seconds = 0;
      auto t = std::chrono::steady_clock::now();
      auto pending = (*c)->StartAllReduceMean(shapes, "bench");
      if (!pending.ok()) {
        std::fprintf(stderr, "allreduce_bench: %s\n", pending.status().message().c_str());
        std::exit(1);
      }
      for (size_t i = 0; i < tensors.size(); ++i) {  // in bucket order, as the backward pass hands gradients over
        if (hot) {
          seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
          float* q = tensors[i].data<float>();
          std::fill_n(q, tensors[i].num_elements(), q[0]);
          t = std::chrono::steady_clock::now();
        }
        if (auto s = (*pending)->Add(i, tensors[i]); !s.ok()) {
          std::fprintf(stderr, "allreduce_bench: %s\n", s.message().c_str());
          std::exit(1);
        }
      }
      auto got = (*pending)->Wait();
      if (!got.ok()) {
        std::fprintf(stderr, "allreduce_bench: %s\n", got.status().message().c_str());
        std::exit(1);
      }
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
      *means = std::move(*got);
      return seconds;
    };
    std::vector<Tensor> means;
    const double o = overlapped(false, &means);
    means.clear();
    MPI_Barrier(MPI_COMM_WORLD);
    const double h = overlapped(true, &means);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = std::chrono::steady_clock::now();
    MPI_Allreduce(MPI_IN_PLACE, plain.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double p = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) bucketed_s.push_back(b), overlapped_s.push_back(o), hot_s.push_back(h), plain_s.push_back(p);
    if (r == 0) {  // the first round's averages: the mean of 1..n; then the values are means, kept by later rounds
      const float want = (n + 1) / 2.0f;
      for (const Tensor& t : means)
        if (t.data<float>()[0] != want || t.data<float>()[t.num_elements() - 1] != want) {
          std::fprintf(stderr, "allreduce_bench: wrong overlapped mean %g, want %g\n", t.data<float>()[0], want);
          return 1;
        }
    }
  }
  // Every value must be the mean of 1..n (bucketed) and the sum (plain): a wrong reduction is not a fast one.
  const float want = (n + 1) / 2.0f;
  for (const Tensor& t : tensors)
    if (t.data<float>()[0] != want || t.data<float>()[t.num_elements() - 1] != want) {
      std::fprintf(stderr, "allreduce_bench: wrong mean %g, want %g\n", t.data<float>()[0], want);
      return 1;
    }
  if ((*c)->rank() == 0) {
    const double bytes = static_cast<double>(total) * 4, bus = 2.0 * (n - 1) / n * bytes / 1e9;
    const double b = Median(bucketed_s), o = Median(overlapped_s), h = Median(hot_s), p = Median(plain_s);
    std::printf("%d ranks, %.0f MB in %zu tensors of %.2f MB, buckets of %.0f MB in pieces of %.2f MB, median of %d "
                "rounds\n", n, bytes / (1 << 20), tensors.size(), tensor_mb, bucket_mb, chunk_mb, rounds);
    std::printf("bucketed AllReduceMean:  %.1f ms, bus bandwidth %.2f GB/s\n", b * 1e3, bus / b);
    std::printf("overlapped (Add, Wait):  %.1f ms, bus bandwidth %.2f GB/s\n", o * 1e3, bus / o);
    std::printf("overlapped, hot tensors: %.1f ms, bus bandwidth %.2f GB/s\n", h * 1e3, bus / h);
    std::printf("plain MPI_Allreduce:     %.1f ms, bus bandwidth %.2f GB/s\n", p * 1e3, bus / p);
    std::printf("bucketed / plain bandwidth: %.2f\n", p / b);
    std::printf("overlapped / plain bandwidth: %.2f\n", p / o);
    std::printf("overlapped (hot) / plain bandwidth: %.2f\n", p / h);
  }
  return 0;
}
