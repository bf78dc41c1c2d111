// TensorBundle reader and SavedModel importer against TF Serving's own test models (../shared/testdata/tf-serving,
// whose README documents y = 0.5x + 2 and y = 0.5x + 3), plus damaged copies of them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/file_util.h"
#include "tensorflow/core/protobuf/saved_model.pb.h"
#include "tensorflow/core/protobuf/trackable_object_graph.pb.h"
#include "tf/saved_model.h"
#include "tf/tensor_bundle.h"

namespace strata::tf {
namespace {

namespace fs = std::filesystem;

std::string TestData() {
  const char* src = std::getenv("STRATA_SOURCE_DIR");
  const std::string dir = std::string(src ? src : ".") + "/../shared/testdata/tf-serving";
  return fs::exists(dir) ? dir : "";
}

#define REQUIRE_TESTDATA()                                                           \
  const std::string data = TestData();                                               \
  if (data.empty()) GTEST_SKIP() << "../shared/testdata/tf-serving is not present"

std::string Fresh(const std::string& name) {
  const std::string d = (fs::temp_directory_path() / ("strata_tf_test_" + name)).string();
  fs::remove_all(d);
  return d;
}

// Copies a version directory to a temp dir.
std::string CopyModel(const std::string& src, const std::string& name) {
  const std::string d = Fresh(name);
  fs::copy(src, d, fs::copy_options::recursive);
  return d;
}

void FlipByte(const std::string& path, int64_t offset_from_start) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset_from_start);
  char c;
  f.read(&c, 1);
  c ^= 0x5a;
  f.seekp(offset_from_start);
  f.write(&c, 1);
}

std::vector<float> RunDefault(const SavedModelImport& sm, const std::vector<float>& x) {
  const ImportedSignature* sig = sm.Default();
  EXPECT_NE(sig, nullptr);
  auto session = graph::Session::Create(sig->model);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  const auto& in = sig->model->graph.inputs.at(0);
  Tensor t = Tensor::FromVector(x, Shape({static_cast<int64_t>(x.size())}));
  if (in.shape.rank_known && in.shape.rank() == 2) t = *t.Reshaped(Shape({static_cast<int64_t>(x.size()), 1}));
  std::vector<Tensor> outs;
  Status s = (*session)->Run({{in.name, t}}, &outs);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return {};
  return outs.at(0).ToVector<float>();
}

TEST(TensorBundleTest, ReadsTf1AndTf2Variables) {
  REQUIRE_TESTDATA();
  auto b1 = TensorBundle::Open(data + "/saved_model_half_plus_two_cpu/00000123/variables/variables");
  ASSERT_TRUE(b1.ok()) << b1.status().ToString();
  auto a = b1->Read("a");
  auto b = b1->Read("b");
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << b.status().ToString();
  EXPECT_EQ(a->ToVector<float>(), std::vector<float>{0.5f});
  EXPECT_EQ(b->ToVector<float>(), std::vector<float>{2.0f});
  auto b2 = TensorBundle::Open(data + "/saved_model_half_plus_two_tf2_cpu/00000123/variables/variables");
  ASSERT_TRUE(b2.ok()) << b2.status().ToString();
  auto a2 = b2->Read("a/.ATTRIBUTES/VARIABLE_VALUE");
  ASSERT_TRUE(a2.ok()) << a2.status().ToString();
  EXPECT_EQ(a2->ToVector<float>(), std::vector<float>{0.5f});
  // The TF2 object graph is a string scalar.
  auto og = b2->ReadStrings("_CHECKPOINTABLE_OBJECT_GRAPH");
  ASSERT_TRUE(og.ok()) << og.status().ToString();
  EXPECT_EQ(og->size(), 1u);
  auto missing = b1->Read("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("has no tensor 'nope'"), std::string::npos);
}

TEST(TensorBundleTest, DamageIsReportedNamingFileAndTensor) {
  REQUIRE_TESTDATA();
  // A flipped byte inside the index's data block: the block CRC catches it.
  std::string d = CopyModel(data + "/saved_model_half_plus_two_cpu/00000123", "crc_index");
  FlipByte(d + "/variables/variables.index", 3);
  auto r = TensorBundle::Open(d + "/variables/variables");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("variables.index: data block at offset 0 has CRC-32C"), std::string::npos)
      << r.status().message();
  // A flipped byte in the data shard: the tensor's CRC catches it, naming the tensor.
  d = CopyModel(data + "/saved_model_half_plus_two_cpu/00000123", "crc_data");
  FlipByte(d + "/variables/variables.data-00000-of-00001", 1);
  auto b = TensorBundle::Open(d + "/variables/variables");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  Status bad = Status::OK();
  for (const auto& [k, e] : b->entries())
    if (e.offset <= 1 && e.offset + e.size > 1) bad = b->Read(k).status();
  EXPECT_EQ(bad.code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.message().find("has CRC-32C"), std::string::npos) << bad.message();
  // A missing shard.
  d = CopyModel(data + "/saved_model_half_plus_two_cpu/00000123", "no_shard");
  fs::remove(d + "/variables/variables.data-00000-of-00001");
  r = TensorBundle::Open(d + "/variables/variables");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shard 0 (" + d + "/variables/variables.data-00000-of-00001) is missing"),
            std::string::npos)
      << r.status().message();
  // A truncated index, and random bytes.
  auto t = TensorBundle::FromIndex("short", "x/variables");
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss);
  EXPECT_FALSE(TensorBundle::FromIndex(std::string(100, '\xff'), "x/variables").ok());
}

TEST(TensorBundleTest, WriterRoundTripsThroughTheReader) {
  const std::string d = Fresh("writer");
  std::map<std::string, Tensor> by_path = {
      {"model/dense/kernel", Tensor::FromVector<float>({1.5f, -2.f, 3.25f, 0.f}, Shape({2, 2}))},
      {"model/step", Tensor::Scalar<int64_t>(42)},
  };
  // Enough tensors to need several table blocks.
  for (int i = 0; i < 300; ++i) by_path["many/t" + std::to_string(i)] = Tensor::FromVector<int32_t>({i, -i});
  ASSERT_TRUE(WriteObjectCheckpoint(d + "/ckpt", by_path).ok());
  auto back = ReadObjectCheckpoint(d + "/ckpt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), by_path.size());
  EXPECT_EQ(back->at("model/dense/kernel").ToVector<float>(), by_path["model/dense/kernel"].ToVector<float>());
  EXPECT_EQ(back->at("model/dense/kernel").shape(), Shape({2, 2}));
  EXPECT_EQ(back->at("model/step").ToVector<int64_t>(), std::vector<int64_t>{42});
  EXPECT_EQ(back->at("many/t299").ToVector<int32_t>(), (std::vector<int32_t>{299, -299}));
  auto raw = TensorBundle::Open(d + "/ckpt");
  ASSERT_TRUE(raw.ok());
  EXPECT_NE(raw->Find("model/step/.ATTRIBUTES/VARIABLE_VALUE"), nullptr);
  EXPECT_FALSE(WriteObjectCheckpoint(d + "/bad", {{"a//b", Tensor::Scalar<float>(1.f)}}).ok());
}

// Keras 3's layout (what tf.train.Checkpoint(model=keras_model) writes, seen in TF 2.21): the layers by position
// under model/_operations (a Sequential model: model/_functional/_operations), variables as the layers' children.
TEST(TensorBundleTest, KerasLayersInPositionOrder) {
  const std::string d = Fresh("keras_layers");
  const Tensor k = Tensor::FromVector<float>({1.f, 2.f}, Shape({1, 2}));
  ASSERT_TRUE(WriteObjectCheckpoint(d + "/functional", {{"model/_operations/10/_kernel", k},
                                                        {"model/_operations/2/gamma", Tensor::Scalar<float>(3.f)},
                                                        {"model/_operations/2/moving_mean", Tensor::Scalar<float>(4.f)},
                                                        {"model/_operations/x/bias", Tensor::Scalar<float>(5.f)},
                                                        {"optimizer/_iterations", Tensor::Scalar<int64_t>(7)}})
                  .ok());
  auto layers = ReadKerasCheckpointLayers(d + "/functional");
  ASSERT_TRUE(layers.ok()) << layers.status().ToString();
  ASSERT_EQ(layers->size(), 2u);  // numeric order: 2 before 10; the non-numeric child is not a layer
  EXPECT_EQ((*layers)[0].path, "model/_operations/2");
  ASSERT_EQ((*layers)[0].variables.size(), 2u);
  EXPECT_EQ((*layers)[0].variables[0].attribute, "gamma");
  EXPECT_EQ((*layers)[0].variables[1].full_name, "model/_operations/2/moving_mean");
  EXPECT_EQ((*layers)[1].path, "model/_operations/10");
  EXPECT_EQ((*layers)[1].variables[0].value.ToVector<float>(), k.ToVector<float>());

  ASSERT_TRUE(WriteObjectCheckpoint(d + "/sequential", {{"model/_functional/_operations/1/bias", k}}).ok());
  auto seq = ReadKerasCheckpointLayers(d + "/sequential");
  ASSERT_TRUE(seq.ok()) << seq.status().ToString();
  ASSERT_EQ(seq->size(), 1u);
  EXPECT_EQ((*seq)[0].path, "model/_operations/1");

  auto missing = ReadKerasCheckpointLayers(d + "/functional", "net");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("model, optimizer"), std::string::npos) << missing.status().message();
  auto not_keras = ReadKerasCheckpointLayers(d + "/functional", "optimizer");
  EXPECT_EQ(not_keras.status().code(), StatusCode::kInvalidArgument);
}

// An object graph whose layer list contains itself (root -> model -> _operations -> "0" = _operations, ten times
// over) is refused as a cycle instead of being walked 10^16 times.
TEST(TensorBundleTest, KerasLayerListCycleIsAnError) {
  const std::string d = Fresh("keras_cycle");
  tensorflow::TrackableObjectGraph g;
  for (int i = 0; i < 3; ++i) g.add_nodes();
  auto child = [&](int from, int to, const std::string& name) {
    auto* c = g.mutable_nodes(from)->add_children();
    c->set_node_id(to);
    c->set_local_name(name);
  };
  child(0, 1, "model");
  child(1, 2, "_operations");
  for (int i = 0; i < 10; ++i) child(2, 2, std::to_string(i));
  child(2, 2, "_operations");
  Tensor og = Tensor::Empty(DType::kString, Shape{});
  og.data<std::string>()[0] = g.SerializeAsString();
  ASSERT_TRUE(WriteTensorBundle(d + "/ckpt", {{"_CHECKPOINTABLE_OBJECT_GRAPH", og}}).ok());
  auto r = ReadKerasCheckpointLayers(d + "/ckpt");
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("cycle"), std::string::npos) << r.status().message();
}

TEST(SavedModelTest, HalfPlusTwoTf1AndTf2Predict) {
  REQUIRE_TESTDATA();
  for (const char* m : {"saved_model_half_plus_two_cpu", "saved_model_half_plus_two_tf2_cpu"}) {
    SCOPED_TRACE(m);
    auto sm = LoadSavedModel(data + "/" + m + "/00000123");
    ASSERT_TRUE(sm.ok()) << sm.status().ToString();
    EXPECT_EQ(sm->Default()->key, "serving_default");
    EXPECT_EQ(RunDefault(*sm, {1.0f, 2.0f, 5.0f}), (std::vector<float>{2.5f, 3.0f, 4.5f}));
    // classify_x_to_y parses tf.Examples with keys x and x2 but uses only x: only x is a model input.
    const ImportedSignature* cls = sm->Find("classify_x_to_y");
    ASSERT_NE(cls, nullptr);
    ASSERT_EQ(cls->features.size(), 1u);
    EXPECT_EQ(cls->features[0].alias, "x");
  }
  auto three = LoadSavedModel(data + "/saved_model_half_plus_three/00000123");
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(RunDefault(*three, {1.0f, 2.0f}), (std::vector<float>{3.5f, 4.0f}));
  // The regress signature parses tf.Examples: its model takes the feature "x".
  const ImportedSignature* reg = three->Find("tensorflow/serving/regress");
  ASSERT_NE(reg, nullptr);
  ASSERT_EQ(reg->features.size(), 1u);
  EXPECT_EQ(reg->features[0].alias, "x");
  ASSERT_EQ(reg->model->graph.inputs.size(), 1u);
  EXPECT_EQ(reg->model->graph.inputs[0].name, "x");
}

// Rewrites saved_model.pb of a copy of the TF1 model with `edit`.
std::string EditedModel(const std::string& data, const std::string& name,
                        const std::function<void(tensorflow::SavedModel*)>& edit) {
  const std::string d = CopyModel(data + "/saved_model_half_plus_two_cpu/00000123", name);
  tensorflow::SavedModel sm;
  std::ifstream in(d + "/saved_model.pb", std::ios::binary);
  EXPECT_TRUE(sm.ParseFromIstream(&in));
  edit(&sm);
  std::ofstream out(d + "/saved_model.pb", std::ios::binary | std::ios::trunc);
  EXPECT_TRUE(sm.SerializeToOstream(&out));
  return d;
}

TEST(SavedModelTest, BadModelsGiveClearErrors) {
  REQUIRE_TESTDATA();
  // An op outside the supported set: the error names the op and the node.
  std::string d = EditedModel(data, "unsupported_op", [](tensorflow::SavedModel* sm) {
    for (auto& n : *sm->mutable_meta_graphs(0)->mutable_graph_def()->mutable_node())
      if (n.op() == "Add" || n.op() == "AddV2") n.set_op("Atan2");
  });
  auto r = LoadSavedModel(d);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("node 'Add' (Atan2): op 'Atan2' is not supported"), std::string::npos)
      << r.status().message();
  // A signature that names a tensor the graph does not have.
  d = EditedModel(data, "missing_tensor", [](tensorflow::SavedModel* sm) {
    auto& sig = (*sm->mutable_meta_graphs(0)->mutable_signature_def())["serving_default"];
    (*sig.mutable_outputs())["y"].set_name("nope:0");
  });
  r = LoadSavedModel(d);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("signature 'serving_default': output 'y' names tensor 'nope:0', which is not "
                                      "in the graph"),
            std::string::npos)
      << r.status().message();
  // A damaged variables index.
  d = CopyModel(data + "/saved_model_half_plus_two_cpu/00000123", "sm_crc");
  FlipByte(d + "/variables/variables.index", 3);
  r = LoadSavedModel(d);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("CRC-32C"), std::string::npos) << r.status().message();
  // Not a SavedModel at all.
  d = Fresh("garbage");
  fs::create_directories(d);
  std::ofstream(d + "/saved_model.pb") << "garbage";
  EXPECT_EQ(LoadSavedModel(d).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace strata::tf
