// Bounded memory: ten epochs over Fashion-MNIST with cache and shuffle do not grow the resident set after the first
// epoch (issue item 8). RSS is read from /proc/self/status.
#include <malloc.h>

#include <cstdio>
#include <fstream>

#include "core/file_util.h"
#include "data_test_util.h"

namespace strata::data {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // ASan's quarantine holds freed memory: RSS says nothing there
#else
constexpr bool kSanitized = false;
#endif

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

int64_t RssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

TEST(MemoryTest, TenEpochsOverFashionMnistWithCacheAndShuffleKeepRssFlat) {
  if (!FileExists(kFashion + "train-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  // One malloc arena: memory that worker threads allocate and other threads free is then reused instead of being
  // spread over per-thread arenas, so RSS measures what the pipeline keeps, not glibc's arena layout.
  ::mallopt(M_ARENA_MAX, 1);
  auto ds = Dataset::Idx(kFashion + "train-images-idx3-ubyte.gz", kFashion + "train-labels-idx1-ubyte.gz")
                .Cache()
                .Shuffle(10000, {.seed = 17})
                .Map(MapTensorFn("image", [](const Tensor& t) { return image::ToFloat(t); }),
                     {.num_parallel_calls = 2})
                .Batch(64)
                .Prefetch(2);
  const int epochs = kSanitized ? 2 : 10;
  std::vector<int64_t> at_end;  // RSS after each epoch, once freed memory is handed back (malloc_trim)
  int64_t peak = 0;             // RSS sampled while epochs 2..10 run
  for (int epoch = 0; epoch < epochs; ++epoch) {
    {
      auto it = *ds.MakeIterator({.epoch = epoch});
      Element batch;
      int64_t examples = 0, label_sum = 0;
      for (int64_t b = 0; *it->GetNext(&batch); ++b) {
        examples += batch.Get("image")->dim(0);
        for (int64_t l : batch.Get("label")->values<int64_t>()) label_sum += l;
        if (epoch > 0 && b % 50 == 0) peak = std::max(peak, RssKb());
      }
      ASSERT_EQ(examples, 60000);
      ASSERT_EQ(label_sum, 6000 * 45);  // every example exactly once: 6000 per class 0..9
    }
    ::malloc_trim(0);
    at_end.push_back(RssKb());
  }
  std::printf("RSS after each epoch (kB): %s; peak while running epochs 2-%d: %lld kB\n", StrJoin(at_end, " ").c_str(),
              epochs, static_cast<long long>(peak));
  if (kSanitized) return;
  // What stays between epochs is the cache (60000 images + labels + metadata, ~100 MB with its bookkeeping). A leak
  // of even 1% of an epoch's 47 MB of pixels per epoch would add 4 MB over nine epochs.
  const int64_t first = at_end[0];
  for (int e = 1; e < epochs; ++e) EXPECT_LT(at_end[e] - first, 4 * 1024) << "RSS grew by epoch " << e + 1;
  // While running, only bounded buffers come on top: the shuffle buffer (10000 cached elements, shared), two
  // parallel map results and two prefetched batches of 64 float images.
  EXPECT_LT(peak - first, 24 * 1024);
}

}  // namespace
}  // namespace strata::data
