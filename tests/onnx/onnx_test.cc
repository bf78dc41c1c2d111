// ONNX import/export: round trips through onnx's own checker, and bad files give clear errors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include <onnx/onnx_pb.h>

#include "cli/alloc_counter.h"
#include "core/file_util.h"
#include "strata/graph.h"
#include "strata/onnx.h"

namespace strata {
namespace {

using graph::Attribute;
using graph::Model;
using graph::Node;

std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/strata_onnx_" + name;
  STRATA_CHECK_OK(MakeDirs(d));
  return d;
}

// y = Relu(x @ W + b) with a Reshape, as a small model built through the IR.
Model SmallModel() {
  Model m;
  m.opset_imports[""] = 17;
  m.graph.name = "small";
  m.graph.inputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(3)})});
  m.graph.outputs.push_back({"y", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(2)})});
  m.graph.initializers["W"] = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{3, 2});
  m.graph.initializers["b"] = Tensor::FromVector<float>({-10, 0.5f}, Shape{2});
  Node mm{.name = "mm", .op_type = "MatMul", .inputs = {"x", "W"}, .outputs = {"xw"}, .opset = 17};
  Node add{.name = "add", .op_type = "Add", .inputs = {"xw", "b"}, .outputs = {"z"}, .opset = 17};
  Node relu{.name = "relu", .op_type = "Relu", .inputs = {"z"}, .outputs = {"y"}, .opset = 17};
  m.graph.nodes = {mm, add, relu};
  return m;
}

TEST(OnnxTest, ExportPassesCheckerAndRoundTrips) {
  Model m = SmallModel();
  m.metadata.emplace_back("labels", "[\"a\",\"b\"]");
  auto bytes = onnx::SerializeModel(m);
  ASSERT_TRUE(bytes.ok());
  EXPECT_TRUE(onnx::CheckModel(*bytes).ok()) << onnx::CheckModel(*bytes).ToString();
  auto back = onnx::ParseModel(*bytes, "", "roundtrip");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->graph.nodes.size(), 3u);
  EXPECT_EQ(back->graph.inputs[0].shape.ToString(), "[batch,3]");
  EXPECT_EQ(back->metadata, m.metadata);
  EXPECT_EQ(back->graph.initializers.at("W").ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Same outputs before and after the round trip.
  Tensor x = Tensor::FromVector<float>({1, 1, 1, 2, 0, -1}, Shape{2, 3});
  std::vector<Tensor> a, b;
  ASSERT_TRUE(graph::RunReference(m, {{"x", x}}, &a).ok());
  ASSERT_TRUE(graph::RunReference(*back, {{"x", x}}, &b).ok());
  EXPECT_EQ(a[0].ToVector<float>(), b[0].ToVector<float>());
  // x row 0 = [1,1,1] -> [9,12] + b = [-1, 12.5] -> relu [0, 12.5]
  EXPECT_EQ(a[0].ToVector<float>()[0], 0.0f);
  EXPECT_EQ(a[0].ToVector<float>()[1], 12.5f);
}

TEST(OnnxTest, GarbageAndTruncatedFilesGiveOneLineErrors) {
  const std::string dir = TempDir("bad");
  std::ofstream(dir + "/garbage.onnx") << "this is not a protobuf \xff\xff\xff\xff";
  auto r = onnx::LoadModel(dir + "/garbage.onnx");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not a valid ONNX model"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);

  auto bytes = onnx::SerializeModel(SmallModel());
  ASSERT_TRUE(bytes.ok());
  // Every truncation must fail cleanly or parse into something the loader/session rejects, never crash.
  for (size_t len : {size_t{1}, size_t{10}, bytes->size() / 2, bytes->size() - 1}) {
    auto t = onnx::ParseModel(std::string_view(*bytes).substr(0, len), "", "cut");
    if (t.ok()) {
      auto s = graph::Session::Create(std::make_shared<Model>(std::move(t).value()));
      (void)s;  // either outcome is fine; the point is no crash
    }
  }
  EXPECT_EQ(onnx::LoadModel(dir + "/missing.onnx").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(onnx::LoadModel(dir).status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(onnx::LoadModel(dir).status().message().find("is a directory, not a regular file"), std::string::npos);
}

TEST(OnnxTest, UnknownOpIsUnimplementedNamingTheNode) {
  Model m = SmallModel();
  m.graph.nodes[2].op_type = "FancyRelu";
  auto s = graph::Session::Create(std::make_shared<Model>(m));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.status().message().find("node 'relu' (FancyRelu): op type 'FancyRelu' is not supported"),
            std::string::npos)
      << s.status().message();
}

// Writes a model whose initializer W lives in an external file at `location`.
void WriteExternalModel(const std::string& path, const std::string& location) {
  auto bytes = onnx::SerializeModel(SmallModel());
  ASSERT_TRUE(bytes.ok());
  ::onnx::ModelProto mp;
  ASSERT_TRUE(mp.ParseFromString(*bytes));
  for (auto& tp : *mp.mutable_graph()->mutable_initializer()) {
    if (tp.name() != "W") continue;
    tp.clear_raw_data();
    tp.set_data_location(::onnx::TensorProto_DataLocation_EXTERNAL);
    auto* kv = tp.add_external_data();
    kv->set_key("location");
    kv->set_value(location);
  }
  std::ofstream(path, std::ios::binary) << mp.SerializeAsString();
}

TEST(OnnxTest, ExternalDataMustStayInsideTheModelDirectory) {
  const std::string dir = TempDir("ext");
  const float w[6] = {1, 2, 3, 4, 5, 6};
  std::ofstream(dir + "/weights.bin", std::ios::binary).write(reinterpret_cast<const char*>(w), sizeof(w));
  std::ofstream(::testing::TempDir() + "/strata_secret.bin", std::ios::binary).write(reinterpret_cast<const char*>(w), sizeof(w));

  WriteExternalModel(dir + "/inside.onnx", "weights.bin");
  auto ok = onnx::LoadModel(dir + "/inside.onnx");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->graph.initializers.at("W").ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));

  WriteExternalModel(dir + "/escape.onnx", "../strata_secret.bin");
  auto bad = onnx::LoadModel(dir + "/escape.onnx");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(bad.status().message().find("outside the model's directory"), std::string::npos) << bad.status().message();

  WriteExternalModel(dir + "/absolute.onnx", "/etc/passwd");
  EXPECT_EQ(onnx::LoadModel(dir + "/absolute.onnx").status().code(), StatusCode::kPermissionDenied);

  std::ofstream(dir + "/short.bin", std::ios::binary).write(reinterpret_cast<const char*>(w), 8);
  WriteExternalModel(dir + "/short.onnx", "short.bin");
  auto short_data = onnx::LoadModel(dir + "/short.onnx");
  ASSERT_FALSE(short_data.ok());
  EXPECT_NE(short_data.status().message().find("raw data has 8 bytes"), std::string::npos) << short_data.status().message();
}

// Runs LoadModel(path) on a thread and waits at most 20 s: a load that blocks (a FIFO) fails the test instead of
// hanging it (the blocked thread is left behind; the FIFO helpers below unblock it).
StatusOr<Model> LoadWithin20s(const std::string& path) {
  auto result = std::make_shared<std::promise<StatusOr<Model>>>();
  auto done = result->get_future();
  std::thread([path, result] { result->set_value(onnx::LoadModel(path)); }).detach();
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready)
    return DeadlineExceededError("LoadModel('", path, "') did not return within 20 s");
  return done.get();
}

// Opens the FIFO for writing without blocking (this succeeds only while a reader waits on it) and closes it, so a
// reader blocked in open() sees an empty file. For cleanup after a failure.
void ReleaseFifoReaders(const std::string& fifo) {
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  if (fd >= 0) ::close(fd);
}

void ExpectRefused(const StatusOr<Model>& r, const std::string& what) {
  ASSERT_FALSE(r.ok()) << what;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
}

TEST(OnnxTest, SpecialFilesAsTheModelAreRefusedWithoutBlockingOrReading) {
  const std::string dir = TempDir("special_model");
  const std::string fifo = dir + "/fifo.onnx", zero = dir + "/zero.onnx", sub = dir + "/dir.onnx";
  ::unlink(fifo.c_str());
  ::unlink(zero.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  ASSERT_EQ(::symlink("/dev/zero", zero.c_str()), 0);
  ASSERT_TRUE(MakeDirs(sub).ok());
  const auto start = std::chrono::steady_clock::now();
  ExpectRefused(LoadWithin20s(fifo), StrCat("'", fifo, "' is a FIFO, not a regular file"));
  ReleaseFifoReaders(fifo);
  ExpectRefused(LoadWithin20s(zero), StrCat("'", zero, "' is a character device, not a regular file"));
  ExpectRefused(LoadWithin20s(sub), StrCat("'", sub, "' is a directory, not a regular file"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // The tensor reader of `strata run --input x=file.pb` takes the same path.
  auto t = onnx::ReadTensorProtoFile(fifo);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("is a FIFO, not a regular file"), std::string::npos) << t.status().message();
}

TEST(OnnxTest, SpecialFilesAsExternalDataAreRefusedWithoutBlockingOrReading) {
  const std::string dir = TempDir("special_external");
  ::unlink((dir + "/fifo.bin").c_str());
  ASSERT_EQ(::mkfifo((dir + "/fifo.bin").c_str(), 0644), 0);
  ASSERT_TRUE(MakeDirs(dir + "/weights_dir").ok());
  WriteExternalModel(dir + "/fifo.onnx", "fifo.bin");
  WriteExternalModel(dir + "/dir.onnx", "weights_dir");
  auto r = LoadWithin20s(dir + "/fifo.onnx");
  ReleaseFifoReaders(dir + "/fifo.bin");
  ExpectRefused(r, StrCat("'", dir, "/fifo.bin' is a FIFO, not a regular file"));
  EXPECT_NE(r.status().message().find("initializer tensor 'W': external data"), std::string::npos)
      << r.status().message();
  ExpectRefused(LoadWithin20s(dir + "/dir.onnx"), StrCat("'", dir, "/weights_dir' is a directory, not a regular file"));
}

// A model whose initializer W claims `dims` but holds `raw` (or, with `external`, points at weights.bin for it).
void WriteHugeInitializerModel(const std::string& path, const std::vector<int64_t>& dims, const std::string& raw,
                               bool external, bool typed = false) {
  auto bytes = onnx::SerializeModel(SmallModel());
  ASSERT_TRUE(bytes.ok());
  ::onnx::ModelProto mp;
  ASSERT_TRUE(mp.ParseFromString(*bytes));
  for (auto& tp : *mp.mutable_graph()->mutable_initializer()) {
    if (tp.name() != "W") continue;
    tp.clear_dims();
    for (int64_t d : dims) tp.add_dims(d);
    tp.clear_raw_data();
    if (typed) {
      for (int i = 0; i < 4; ++i) tp.add_float_data(1.0f);
    } else if (external) {
      std::ofstream(Dirname(path) + "/weights.bin", std::ios::binary) << raw;
      tp.set_data_location(::onnx::TensorProto_DataLocation_EXTERNAL);
      auto* kv = tp.add_external_data();
      kv->set_key("location");
      kv->set_value("weights.bin");
    } else {
      tp.set_raw_data(raw);
    }
  }
  std::ofstream(path, std::ios::binary) << mp.SerializeAsString();
}

TEST(OnnxTest, InitializerSizesAreCheckedAgainstTheDataBeforeAllocating) {
  const std::string dir = TempDir("huge");
  const std::string path = dir + "/huge.onnx";
  const std::string sixteen(16, '\1');
  auto expect = [&](const std::string& want) {
    auto r = onnx::LoadModel(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
    EXPECT_NE(r.status().message().find(StrCat(path, " initializer tensor 'W': ")), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find("out of memory"), std::string::npos) << r.status().message();
  };
  WriteHugeInitializerModel(path, {1000000000000}, sixteen, false);
  expect("raw data has 16 bytes, float32[1000000000000] needs 4000000000000");
  WriteHugeInitializerModel(path, {1000000000000}, sixteen, true);
  expect("raw data has 16 bytes, float32[1000000000000] needs 4000000000000 (external data 'weights.bin' [0, 16)");
  WriteHugeInitializerModel(path, {1000000000000}, "", false, /*typed=*/true);
  expect("float_data has 4 values, float32[1000000000000] needs 1000000000000");
  // Dimensions whose product overflows int64.
  WriteHugeInitializerModel(path, {int64_t{1} << 40, int64_t{1} << 40}, sixteen, false);
  expect("has more than 2^40 elements");
}

// x float32[1,4,8,8] -> k blocks of Conv 1x1 (W_i) -> BatchNormalization -> Relu -> y: each block folds and fuses
// into one FusedConv, and each fold makes two new initializer names.
Model ConvBatchNormChain(int k) {
  Model m;
  m.opset_imports[""] = 17;
  m.graph.name = "conv_bn_chain";
  m.graph.inputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim(1), Dim(4), Dim(8), Dim(8)})});
  m.graph.outputs.push_back({"y", DType::kFloat32, PartialShape::Of({Dim(1), Dim(4), Dim(8), Dim(8)})});
  std::string prev = "x";
  for (int i = 0; i < k; ++i) {
    const std::string p = StrCat("b", i, "_");
    m.graph.initializers[p + "W"] = Tensor::FromVector<float>(std::vector<float>(16, 0.25f), Shape{4, 4, 1, 1});
    for (const char* name : {"scale", "bias", "mean", "var"})
      m.graph.initializers[p + name] = Tensor::FromVector<float>({1, 1, 1, 1}, Shape{4});
    const std::string out = i + 1 == k ? "y" : p + "out";
    m.graph.nodes.push_back(
        Node{.name = p + "conv", .op_type = "Conv", .inputs = {prev, p + "W"}, .outputs = {p + "c"}, .opset = 17});
    m.graph.nodes.push_back(Node{.name = p + "bn",
                                 .op_type = "BatchNormalization",
                                 .inputs = {p + "c", p + "scale", p + "bias", p + "mean", p + "var"},
                                 .outputs = {p + "n"},
                                 .opset = 17});
    m.graph.nodes.push_back(
        Node{.name = p + "relu", .op_type = "Relu", .inputs = {p + "n"}, .outputs = {out}, .opset = 17});
    prev = out;
  }
  return m;
}

// Heap allocations (global operator new, counted by cli/alloc_counter.cc linked into this test) made by one
// Session::Create of `model`: a deterministic measure of the work of loading. Checks the chain fused.
int64_t SessionCreateAllocations(const std::shared_ptr<Model>& model, size_t blocks) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t before = cli::HeapAllocationCount();
  auto s = graph::Session::Create(model);
  const int64_t count = cli::HeapAllocationCount() - before;
  std::printf("Session::Create of %zu Conv+BatchNormalization+Relu blocks: %.3f s, %lld allocations\n", blocks,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              static_cast<long long>(count));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (s.ok()) {
    EXPECT_LE((*s)->optimized_graph().nodes.size(), blocks + 2);  // one FusedConv per block (+ Transposes to NHWC)
  }
  return count;
}

// Loading (sort, verification, the default passes) must do work about linear in the graph: a pass that made each
// fresh name by collecting every name of the graph did O(n) work per fusion, so a chain of 2000 Conv +
// BatchNormalization blocks took 23 s to load instead of 0.1 s. Counted in heap allocations rather than timed: 4x the
// blocks must make well under 16x the allocations (linear: 4x).
TEST(LoadScalingTest, ConvBatchNormChainLoadsWithLinearWork) {
  if (cli::HeapAllocationCount() < 0) GTEST_SKIP() << "this build does not count allocations (sanitizers)";
  auto small = std::make_shared<Model>(ConvBatchNormChain(250));
  auto large = std::make_shared<Model>(ConvBatchNormChain(1000));
  const int64_t a_small = SessionCreateAllocations(small, 250);
  const int64_t a_large = SessionCreateAllocations(large, 1000);
  EXPECT_LT(a_large, 6 * a_small) << "250 blocks: " << a_small << " allocations, 1000 blocks: " << a_large;
}

TEST(SessionInputTest, WrongNameDtypeAndShapeAreExplained) {
  auto session = graph::Session::Create(std::make_shared<Model>(SmallModel()));
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> out;
  Tensor good = Tensor::Zeros(DType::kFloat32, Shape{4, 3});
  Status s = (*session)->Run({{"X", good}}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown input 'X' (did you mean 'x'?)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'x' float32[batch,3]"), std::string::npos) << s.message();
  s = (*session)->Run({{"x", Tensor::Zeros(DType::kInt64, Shape{4, 3})}}, &out);
  EXPECT_NE(s.message().find("input 'x' expects float32[batch,3], got int64[4,3]"), std::string::npos) << s.message();
  s = (*session)->Run({{"x", Tensor::Zeros(DType::kFloat32, Shape{4, 5})}}, &out);
  EXPECT_NE(s.message().find("input 'x' expects shape [batch,3] float32, got [4,5] float32"), std::string::npos)
      << s.message();
  s = (*session)->Run({}, &out);
  EXPECT_NE(s.message().find("missing input 'x'"), std::string::npos) << s.message();
  EXPECT_TRUE((*session)->Run({{"x", good}}, &out).ok());
}

TEST(SessionMemoryTest, LimitGivesResourceExhaustedNamingNodeBytesAndLimit) {
  graph::SessionOptions opts;
  opts.memory_limit_bytes = 1000;
  opts.optimize = false;  // keep xw and z as planned intermediates (fusion would compute y in one node)
  auto session = graph::Session::Create(std::make_shared<Model>(SmallModel()), opts);
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> out;
  // 1000 rows: xw and z are 8000 bytes each; the output alone exceeds the limit.
  Status s = (*session)->Run({{"x", Tensor::Zeros(DType::kFloat32, Shape{1000, 3})}}, &out);
  ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("bytes"), std::string::npos);
  EXPECT_NE(s.message().find("limit of 1000 bytes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("of node 'mm' (MatMul), 8000 bytes"), std::string::npos) << s.message();
  // Small batches fit.
  EXPECT_TRUE((*session)->Run({{"x", Tensor::Zeros(DType::kFloat32, Shape{2, 3})}}, &out).ok());
}

TEST(SessionMemoryTest, DynamicAllocationNamesTheNode) {
  graph::SessionOptions opts;
  opts.memory_limit_bytes = 1000;
  opts.plan_memory = false;  // every intermediate is allocated by its node
  opts.optimize = false;     // and MatMul stays MatMul (not fused with the Add and Relu)
  auto session = graph::Session::Create(std::make_shared<Model>(SmallModel()), opts);
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> out;
  Status s = (*session)->Run({{"x", Tensor::Zeros(DType::kFloat32, Shape{200, 3})}}, &out);
  ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("node 'mm' (MatMul)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("allocating 1600 bytes would exceed the memory limit of 1000 bytes"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace strata
