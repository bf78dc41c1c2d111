// Data pipeline throughput (Google Benchmark), recorded in BENCHMARKS.md:
//  - raw read rate of the Fashion-MNIST TFRecord files (plain read(), 256 KiB at a time) and TFRecord framing+CRC;
//  - read + parse Example -> float32 [28,28,1] / 255 for the png and raw encodings, with 1 and 2 threads, per
//    example and (raw) vectorised over batches of 64;
//  - JPEG decode + bilinear resize to 224x224 (500x375 q90 colour JPEGs), with 1 and 2 threads, next to the raw
//    read rate of the TFRecord file holding those JPEGs.
// "1 thread" runs the map on the calling thread; "2 threads" is Map(num_parallel_calls = 2). The files are written
// once into $STRATA_BENCH_DIR (default /tmp/strata_bench) from /usr/share/datasets/fashion-mnist and are read warm
// from the page cache.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/file_util.h"
#include "core/random.h"
#include "io/image_codec.h"
#include "io/tfrecord.h"
#include "strata/data.h"

namespace strata::data {
namespace {

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

std::string BenchDir() {
  const char* d = std::getenv("STRATA_BENCH_DIR");
  return d ? d : "/tmp/strata_bench";
}

std::string FashionFile(const std::string& encoding) { return BenchDir() + "/fmnist-train-" + encoding + ".tfrecord"; }
std::string JpegFile() { return BenchDir() + "/jpeg-500x375.tfrecord"; }

// Writes the Fashion-MNIST training set as Examples (as `strata data import-idx` does) unless already there.
Status PrepareFashion(const std::string& encoding) {
  const std::string path = FashionFile(encoding);
  if (FileExists(path)) return Status::OK();
  STRATA_RETURN_IF_ERROR(MakeDirs(BenchDir()));
  STRATA_ASSIGN_OR_RETURN(auto it, Dataset::Idx(kFashion + "train-images-idx3-ubyte.gz", kFashion + "train-labels-idx1-ubyte.gz")
                                       .MakeIterator());
  STRATA_ASSIGN_OR_RETURN(auto w, io::TfRecordWriter::Open(path, {.atomic = true}));
  Element e;
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(bool more, it->GetNext(&e));
    if (!more) break;
    const Tensor image = *e.Get("image");
    io::Example ex;
    if (encoding == "png") {
      STRATA_ASSIGN_OR_RETURN(std::string png, io::EncodePng(image));
      ex.features["image/encoded"] = io::Feature::Bytes({std::move(png)});
    } else {
      ex.features["image"] = io::Feature::Bytes({std::string(static_cast<const char*>(image.raw_data()), image.byte_size())});
    }
    ex.features["image/shape"] = io::Feature::Int64s({28, 28, 1});
    ex.features["label"] = io::Feature::Int64s({e.Get("label")->data<int64_t>()[0]});
    STRATA_RETURN_IF_ERROR(w->Write(io::SerializeExample(ex)));
  }
  return w->Close();
}

// 256 textured colour 500x375 JPEGs at quality 90 (ImageNet-like size, ~90 KB each), as Examples.
Status PrepareJpegs() {
  if (FileExists(JpegFile())) return Status::OK();
  STRATA_RETURN_IF_ERROR(MakeDirs(BenchDir()));
  STRATA_ASSIGN_OR_RETURN(auto w, io::TfRecordWriter::Open(JpegFile(), {.atomic = true}));
  Rng rng(1);
  for (int i = 0; i < 256; ++i) {
    Tensor img = Tensor::Empty(DType::kUInt8, Shape{375, 500, 3});
    const float fx = 0.01f + rng.Uniform() * 0.05f, fy = 0.01f + rng.Uniform() * 0.05f;
    for (int64_t y = 0; y < 375; ++y)
      for (int64_t x = 0; x < 500; ++x)
        for (int64_t c = 0; c < 3; ++c)
          img.data<uint8_t>()[(y * 500 + x) * 3 + c] = static_cast<uint8_t>(
              127 + 60 * std::sin(fx * x * (c + 1)) + 60 * std::cos(fy * y + c) + static_cast<float>(rng.Below(40)));
    STRATA_ASSIGN_OR_RETURN(std::string jpg, io::EncodeJpeg(img, 90));
    io::Example ex;
    ex.features["image/encoded"] = io::Feature::Bytes({std::move(jpg)});
    ex.features["label"] = io::Feature::Int64s({i % 10});
    STRATA_RETURN_IF_ERROR(w->Write(io::SerializeExample(ex)));
  }
  return w->Close();
}

bool Prepared(benchmark::State& state, const Status& s) {
  if (s.ok()) return true;
  state.SkipWithError(s.ToString().c_str());
  return false;
}

// Drains a dataset; returns the number of examples (rows) seen.
int64_t Drain(const Dataset& ds) {
  auto it = ds.MakeIterator();
  STRATA_CHECK(it.ok(), it.status().ToString());
  Element e;
  int64_t n = 0;
  for (;;) {
    auto more = (*it)->GetNext(&e);
    STRATA_CHECK(more.ok(), more.status().ToString());
    if (!*more) return n;
    n += static_cast<int64_t>(e.metadata.size());
  }
}

// CPU seconds used by the whole process (all threads), user + system.
double ProcessCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// examples/s is wall-clock throughput; examples/cpu_s divides by the CPU time of all threads, which says what each
// example costs even when other processes compete for the cores.
void Report(benchmark::State& state, int64_t examples, int64_t bytes, double cpu_seconds) {
  state.counters["examples/s"] = benchmark::Counter(static_cast<double>(examples), benchmark::Counter::kIsRate);
  state.counters["examples/cpu_s"] = static_cast<double>(examples) / std::max(cpu_seconds, 1e-9);
  if (bytes > 0) state.SetBytesProcessed(bytes);
}

void RawRead(benchmark::State& state, const std::string& path, int64_t records) {
  std::vector<char> buf(256 << 10);
  int64_t bytes = 0, examples = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    ssize_t n;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) bytes += n;
    ::close(fd);
    examples += records;
  }
  Report(state, examples, bytes, ProcessCpuSeconds() - cpu0);
}

void BM_RawRead(benchmark::State& state, const std::string& encoding) {
  const bool jpeg = encoding == "jpeg";
  if (!Prepared(state, jpeg ? PrepareJpegs() : PrepareFashion(encoding))) return;
  RawRead(state, jpeg ? JpegFile() : FashionFile(encoding), jpeg ? 256 : 60000);
}

void BM_TfRecordFraming(benchmark::State& state, const std::string& encoding) {
  if (!Prepared(state, PrepareFashion(encoding))) return;
  int64_t examples = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) examples += Drain(Dataset::TfRecord({FashionFile(encoding)}));
  const auto size = static_cast<int64_t>(std::filesystem::file_size(FashionFile(encoding)));
  Report(state, examples, size * state.iterations(), ProcessCpuSeconds() - cpu0);
}

MapFn ParseFashion(const std::string& encoding) {
  const bool png = encoding == "png";
  std::vector<io::FeatureSpec> specs = {io::FeatureSpec::FixedLen(png ? "image/encoded" : "image", DType::kString),
                                        io::FeatureSpec::FixedLen("label", DType::kInt64)};
  MapFn parse = ParseExampleFn(specs);
  MapFn decode = png ? image::DecodeFn("image/encoded", "image", 1) : DecodeRawFn("image", "image", DType::kUInt8, {28, 28, 1});
  MapFn to_float = MapTensorFn("image", [](const Tensor& t) { return image::ToFloat(t); });
  return [=](Element& e) -> Status {
    STRATA_RETURN_IF_ERROR(parse(e));
    STRATA_RETURN_IF_ERROR(decode(e));
    return to_float(e);
  };
}

void BM_ReadParse(benchmark::State& state, const std::string& encoding) {
  if (!Prepared(state, PrepareFashion(encoding))) return;
  const int64_t threads = state.range(0);
  MapOptions o;
  o.num_parallel_calls = threads == 1 ? 0 : threads;
  const Dataset ds = Dataset::TfRecord({FashionFile(encoding)}).Map(ParseFashion(encoding), o).Batch(64);
  int64_t examples = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) examples += Drain(ds);
  Report(state, examples, 0, ProcessCpuSeconds() - cpu0);
}

// The vectorised form: batch the serialized records first, then parse and decode 64 at a time.
void BM_ReadParseBatched(benchmark::State& state) {
  if (!Prepared(state, PrepareFashion("raw"))) return;
  const int64_t threads = state.range(0);
  MapOptions o;
  o.num_parallel_calls = threads == 1 ? 0 : threads;
  MapFn parse = ParseExampleBatchFn({io::FeatureSpec::FixedLen("image", DType::kString),
                                     io::FeatureSpec::FixedLen("label", DType::kInt64)});
  MapFn decode = DecodeRawFn("image", "image", DType::kUInt8, {28, 28, 1});
  MapFn to_float = MapTensorFn("image", [](const Tensor& t) { return image::ToFloat(t); });
  const Dataset ds = Dataset::TfRecord({FashionFile("raw")})
                         .Batch(64)
                         .Map(
                             [=](Element& e) -> Status {
                               STRATA_RETURN_IF_ERROR(parse(e));
                               STRATA_RETURN_IF_ERROR(decode(e));
                               return to_float(e);
                             },
                             o);
  int64_t examples = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) examples += Drain(ds);
  Report(state, examples, 0, ProcessCpuSeconds() - cpu0);
}

void BM_JpegDecodeResize224(benchmark::State& state) {
  if (!Prepared(state, PrepareJpegs())) return;
  const int64_t threads = state.range(0);
  MapOptions o;
  o.num_parallel_calls = threads == 1 ? 0 : threads;
  MapFn parse = ParseExampleFn({io::FeatureSpec::FixedLen("image/encoded", DType::kString)});
  MapFn decode = image::DecodeFn("image/encoded", "image", 3);
  MapFn resize = MapTensorFn("image", [](const Tensor& t) { return image::Resize(t, 224, 224); });
  const Dataset ds = Dataset::TfRecord({JpegFile()})
                         .Map(
                             [=](Element& e) -> Status {
                               STRATA_RETURN_IF_ERROR(parse(e));
                               STRATA_RETURN_IF_ERROR(decode(e));
                               return resize(e);
                             },
                             o)
                         .Batch(32);
  int64_t examples = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) examples += Drain(ds);
  Report(state, examples, 0, ProcessCpuSeconds() - cpu0);
}

BENCHMARK_CAPTURE(BM_RawRead, fmnist_png, std::string("png"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_RawRead, fmnist_raw, std::string("raw"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_RawRead, jpeg_500x375, std::string("jpeg"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TfRecordFraming, fmnist_png, std::string("png"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_TfRecordFraming, fmnist_raw, std::string("raw"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReadParse, fmnist_png, std::string("png"))
    ->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReadParse, fmnist_raw, std::string("raw"))
    ->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadParseBatched)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_JpegDecodeResize224)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace strata::data

BENCHMARK_MAIN();
