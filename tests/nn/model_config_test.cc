// Model config (Model::GetConfig / ModelFromConfig): every public layer and the zoo models round-trip (same weights
// by name and shape, same trainable flags and dtype policies, bit-identical outputs with the same weights, and the
// same config again); bad configs are refused naming the place; custom layers need custom_objects.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>

#include "strata/nn.h"

namespace strata::nn {
namespace {

using Feeds = std::vector<std::pair<std::string, Tensor>>;

std::vector<Tensor> RunModel(const Model& m, const Feeds& feeds) {
  auto g = m.InferenceModel();
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return {};
  auto session = graph::Session::Create(std::make_shared<graph::Model>(std::move(*g)));
  EXPECT_TRUE(session.ok()) << session.status().message();
  std::vector<Tensor> out;
  Status s = (*session)->Run(feeds, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

Tensor Ramp(const Shape& shape, float scale) {
  Tensor t = Tensor::Empty(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = scale * float((i * 37) % 101) / 101.0f - 0.3f;
  return t;
}

// The rebuilt model has the original's weights (names, shapes, trainable flags, order), layers (class, name,
// trainable, dtype policy), inputs and outputs; with the original's weights it computes the same bits; and its config
// is the original's.
void ExpectRoundTrip(const Model& original, const Feeds& feeds) {
  auto config = original.GetConfig();
  ASSERT_TRUE(config.ok()) << config.status().message();
  auto rebuilt = ModelFromConfig(*config, {}, /*seed=*/7);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().message();
  Model& r = **rebuilt;
  EXPECT_EQ(r.name(), original.name());
  EXPECT_EQ(r.CountParams(), original.CountParams());
  EXPECT_EQ(r.CountParams(true), original.CountParams(true));
  ASSERT_EQ(r.weight_specs().size(), original.weight_specs().size());
  for (size_t i = 0; i < r.weight_specs().size(); ++i) {
    EXPECT_EQ(r.weight_specs()[i].name, original.weight_specs()[i].name);
    EXPECT_EQ(r.weight_specs()[i].shape, original.weight_specs()[i].shape) << r.weight_specs()[i].name;
    EXPECT_EQ(r.weight_specs()[i].trainable, original.weight_specs()[i].trainable) << r.weight_specs()[i].name;
  }
  ASSERT_EQ(r.layers().size(), original.layers().size());
  for (size_t i = 0; i < r.layers().size(); ++i) {
    EXPECT_EQ(r.layers()[i]->type(), original.layers()[i]->type());
    EXPECT_EQ(r.layers()[i]->name(), original.layers()[i]->name());
    EXPECT_EQ(r.layers()[i]->trainable(), original.layers()[i]->trainable());
    EXPECT_EQ(r.layers()[i]->dtype_policy(), original.layers()[i]->dtype_policy());
  }
  EXPECT_EQ(r.input_names(), original.input_names());
  EXPECT_EQ(r.output_names(), original.output_names());
  ASSERT_EQ(r.input_specs().size(), original.input_specs().size());
  for (size_t i = 0; i < r.input_specs().size(); ++i) {
    EXPECT_EQ(r.input_specs()[i].shape, original.input_specs()[i].shape);
    EXPECT_EQ(r.input_specs()[i].dtype, original.input_specs()[i].dtype);
  }
  auto again = r.GetConfig();
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *config);
  ASSERT_TRUE(r.SetWeights(original.weights()).ok());
  const std::vector<Tensor> want = RunModel(original, feeds), got = RunModel(r, feeds);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(want.empty());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].TypeString(), want[i].TypeString()) << "output " << i;
    const std::vector<float> g = got[i].ToVector<float>(), w = want[i].ToVector<float>();
    ASSERT_EQ(g.size(), w.size());
    EXPECT_EQ(std::memcmp(g.data(), w.data(), w.size() * sizeof(float)), 0) << "output " << i;
  }
}

// Every layer of nn.h, each with non-default arguments, a shared layer called twice, two inputs (one int64), two
// outputs, a frozen layer and a per-layer dtype policy.
TEST(ModelConfigTest, EveryLayerRoundTrips) {
  auto image = Input({9, 9, 2}, "image");
  auto tokens = Input({3}, "tokens", DType::kInt64);
  auto x = Rescaling(0.5, 0.25)(image);
  x = Normalization({0.1f, -0.2f}, {2.0f, 0.5f})(x);
  x = ZeroPadding2D({1, 0, 2, 1})(x);
  x = Conv2D(4, {3, 2},
             {.strides = {1, 2},
              .padding = "same",
              .groups = 2,
              .activation = "relu6",
              .kernel_initializer = "he_normal",
              .bias_initializer = "ones"})(x);
  x = DepthwiseConv2D({3, 3}, 2, {.padding = "valid", .dilation_rate = {1, 1}, .activation = "hard_swish"})(x);
  LayerRef bn = BatchNormalization({.momentum = 0.9, .epsilon = 1e-5, .center = false, .name = "frozen_bn"});
  bn->set_trainable(false);
  x = bn(x);
  auto a = MaxPooling2D({2, 1}, {.strides = {1, 1}, .padding = "same"})(x);
  auto b = AveragePooling2D({2, 2}, {.strides = {1, 1}})(x);
  auto ga = GlobalAveragePooling2D("", true)(a);
  auto gm = GlobalMaxPooling2D()(b);
  auto feats = Concatenate(-1)({Flatten()(ga), gm});
  LayerRef shared = Dense(6, {.activation = "gelu", .kernel_initializer = "lecun_uniform"});
  shared->set_dtype_policy(DTypePolicy::kMixedBFloat16);
  auto h1 = shared(feats);
  auto emb = Embedding(11, 4)(tokens);                // (batch, 3, 4)
  auto e = Flatten()(LayerNormalization(1e-4)(emb));  // (batch, 12)
  auto h2 = shared(Dense(16, {.activation = "tanh", .use_bias = false})(e));
  auto merged = Multiply()({Add()({h1, h2}), Activation("sigmoid")(h1)});
  merged = Dropout(0.3, "", {})(merged);
  auto r = Reshape({2, 3})(merged);
  auto y = Activation("softmax")(r);
  Model m({image, tokens}, {{"probs", y}, {"hidden", h2}}, "every_layer");
  Status built = m.Build(3);
  ASSERT_TRUE(built.ok()) << built.message();
  // Each class appears (the round trip below then covers all of them).
  std::set<std::string> classes;
  for (Layer* l : m.layers()) classes.insert(l->type());
  for (const std::string& c : BuiltinLayerClasses()) EXPECT_TRUE(classes.count(c)) << c << " not in the test model";
  Tensor toks = Tensor::FromVector<int64_t>({1, 10, 3, 0, 7, 7}, Shape{2, 3});
  ExpectRoundTrip(m, {{"image", Ramp(Shape{2, 9, 9, 2}, 2.0f)}, {"tokens", toks}});
}

// The JSON itself, for a small model (written by hand here, not by the code under test).
TEST(ModelConfigTest, WritesKerasStyleJson) {
  auto in = Input({4}, "x");
  Model m(in, Dense(3, {.activation = "relu", .use_bias = false, .name = "head"})(in), "tiny");
  ASSERT_TRUE(m.Build().ok());
  auto config = m.GetConfig();
  ASSERT_TRUE(config.ok()) << config.status().message();
  const std::string compact = [&] {
    std::string s;
    for (char c : *config)
      if (c != '\n' && c != ' ') s += c;
    return s;
  }();
  EXPECT_EQ(compact,
            "{\"class_name\":\"Functional\",\"format_version\":1,\"config\":{\"name\":\"tiny\",\"layers\":["
            "{\"class_name\":\"InputLayer\",\"name\":\"x\",\"config\":{\"batch_shape\":[null,4],\"dtype\":\"float32\"},"
            "\"inbound_nodes\":[]},"
            "{\"class_name\":\"Dense\",\"name\":\"head\",\"trainable\":true,\"dtype_policy\":null,\"config\":{"
            "\"units\":3,\"activation\":\"relu\",\"use_bias\":false,\"kernel_initializer\":\"glorot_uniform\","
            "\"bias_initializer\":\"zeros\"},\"inbound_nodes\":[[[\"x\",0,0]]]}],"
            "\"input_layers\":[\"x\"],\"output_layers\":[{\"name\":\"output\",\"tensor\":[\"head\",0,0]}],"
            "\"losses\":[]}}");
  Model unbuilt(in, Dense(3)(in));
  EXPECT_EQ(unbuilt.GetConfig().status().code(), StatusCode::kFailedPrecondition);
}

TEST(ModelConfigTest, SmallZooModelsRoundTrip) {
  for (const char* name : {"mlp", "cnn_small", "cnn_small_same", "resnet18"}) {
    SCOPED_TRACE(name);
    auto m = ZooModel(name, {32, 32, 3}, 5);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_TRUE((*m)->Build(1).ok());
    ExpectRoundTrip(**m, {{"input_image", Ramp(Shape{2, 32, 32, 3}, 1.0f)}});
  }
}

// keras.applications' architectures at their smallest inputs (32x32; the Keras minimum for the ResNets).
TEST(ModelConfigTest, ApplicationsRoundTrip) {
  for (const char* name : {"ResNet50V2", "MobileNetV3Small", "MobileNetV3Large", "EfficientNetV2B0"}) {
    SCOPED_TRACE(name);
    ApplicationOptions o;
    o.input_shape = {32, 32, 3};
    o.classes = 4;
    auto m = Application(name, o, 2);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ExpectRoundTrip(**m, {{"input_image", Ramp(Shape{1, 32, 32, 3}, 255.0f)}});
  }
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

void ExpectError(const std::string& config, const std::vector<std::string>& parts) {
  auto m = ModelFromConfig(config);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().message();
  for (const std::string& p : parts) EXPECT_NE(m.status().message().find(p), std::string::npos) << m.status().message();
}

TEST(ModelConfigTest, BadConfigsNameWhatAndWhere) {
  auto in = Input({4}, "x");
  auto h = Dense(3, {.name = "hidden"})(in);
  Model m(in, Dense(2, {.name = "head"})(h), "bad");
  ASSERT_TRUE(m.Build().ok());
  auto config = m.GetConfig();
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(ModelFromConfig(*config).ok());
  ExpectError(Replace(*config, "\"class_name\":\"Dense\"", "\"class_name\":\"Denze\""),
              {"layers[1] ('hidden')", "unknown layer class 'Denze'", "Dense", "custom_objects"});
  ExpectError(Replace(*config, "\"units\":3", "\"units\":\"3\""),
              {"layers[1] ('hidden')", "'units' expects an integer", "string"});
  ExpectError(Replace(*config, "\"use_bias\":true", "\"use_bias\":1"), {"layers[1] ('hidden')", "'use_bias'"});
  ExpectError(Replace(*config, "\"units\":3", "\"unitz\":3"), {"layers[1] ('hidden')", "'units'", "missing"});
  ExpectError(Replace(*config, "\"units\":3,", "\"units\":3,\"dropout\":0.5,"),
              {"layers[1] ('hidden')", "unknown config argument 'dropout'"});
  ExpectError(Replace(*config, "[\"hidden\",0,0]", "[\"hiden\",0,0]"),
              {"layers[2] ('head') inbound_nodes[0][0]", "layer 'hiden'", "does not have"});
  ExpectError(Replace(*config, "[\"hidden\",0,0]", "[\"hidden\",1,0]"),
              {"layers[2] ('head') inbound_nodes[0][0]", "call 1 of layer 'hidden'"});
  ExpectError(Replace(*config, "[\"x\",0,0]", "[\"head\",0,0]"), {"wait on each other", "'hidden'", "'head'"});
  ExpectError(Replace(*config, "\"dtype_policy\":null", "\"dtype_policy\":\"float8\""),
              {"layers[1] ('hidden') dtype_policy", "float8"});
  ExpectError(Replace(*config, "\"name\":\"head\",", "\"name\":\"hidden\","), {"a second layer named 'hidden'"});
  ExpectError(Replace(*config, "\"Functional\"", "\"Sequential\""), {"class_name 'Sequential'"});
  ExpectError("[1, 2]", {"model config"});
  EXPECT_FALSE(ModelFromConfig("{\"class_name\": ").ok());
  // A config whose layers do not fit together fails at Build, with the layer named.
  auto misfit = ModelFromConfig(Replace(Replace(*config, "\"units\":3", "\"units\":5"), "\"batch_shape\":[null,4]",
                                        "\"batch_shape\":[null,4,2]"));
  ASSERT_TRUE(misfit.ok()) << misfit.status().message();  // shapes follow the input, as in Keras
  ExpectError(Replace(*config, "\"batch_shape\":[null,4]", "\"batch_shape\":[null,-4]"), {"Input 'x'"});
}

// Hostile configs never crash: every prefix of a config, and every integer in it replaced by 0 or -1, either rebuilds
// a model or is an error.
TEST(ModelConfigTest, TruncatedAndMutatedConfigsAreErrorsNotCrashes) {
  auto image = Input({6, 6, 2}, "image");
  auto tokens = Input({3}, "tokens", DType::kInt64);
  auto x = ZeroPadding2D({1, 0, 0, 1})(Rescaling(0.5)(image));
  x = Conv2D(4, 3, {.strides = {1, 1}, .groups = 2})(x);
  x = DepthwiseConv2D({2, 2}, 2)(BatchNormalization()(x));
  x = AveragePooling2D({2, 2})(MaxPooling2D({1, 1})(x));
  auto f = Concatenate()({GlobalAveragePooling2D()(x), GlobalMaxPooling2D()(x)});
  auto e = Flatten()(LayerNormalization()(Embedding(5, 2)(tokens)));
  auto y = Dense(6)(Concatenate()({f, e}));
  y = Activation("relu")(Reshape({2, 3})(Dropout(0.1)(Add()({y, Multiply()({y, y})}))));
  Model m({image, tokens}, {{"y", y}}, "mutants");
  ASSERT_TRUE(m.Build().ok());
  const std::string config = *m.GetConfig();
  int ok = 0, failed = 0;
  for (size_t n = 0; n < config.size(); ++n) (ModelFromConfig(config.substr(0, n)).ok() ? ok : failed)++;
  EXPECT_EQ(ok, 0);
  for (size_t i = 0; i < config.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(config[i])) || std::isdigit(static_cast<unsigned char>(config[i - 1])))
      continue;
    size_t end = i;
    while (end < config.size() && std::isdigit(static_cast<unsigned char>(config[end]))) ++end;
    if (config[end] == '.' || config[i - 1] == '.' || config[i - 1] == '-') continue;  // integers only
    for (const char* v : {"0", "-1"}) {
      const std::string mutated = config.substr(0, i) + v + config.substr(end);
      auto r = ModelFromConfig(mutated);
      (r.ok() ? ok : failed)++;
      EXPECT_TRUE(r.ok() || !r.status().message().empty());
    }
  }
  EXPECT_GT(failed, 100);
  // The crash this found: an Embedding of negative size (also through the API).
  auto t = Input({3}, "t", DType::kInt64);
  Model neg(t, Embedding(-1, 2)(t));
  Status built = neg.Build();
  EXPECT_EQ(built.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(built.message().find("input_dim and output_dim must be positive, got -1 and 2"), std::string::npos)
      << built.message();
}

// A user layer: x * factor, with GetConfig. Without it (or without a factory) the config names the layer.
class ScaleLayer final : public Layer {
 public:
  explicit ScaleLayer(double factor, bool describable = true)
      : Layer("Scale", ""), factor_(factor), describable_(describable) {}
  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    return std::vector<Value>{
        {ctx.Emit1("Mul", {in[0].name, ctx.Constant(Tensor::Scalar<float>(float(factor_)))}), in[0].channels_first}};
  }
  StatusOr<std::string> GetConfig() const override {
    if (!describable_) return Layer::GetConfig();
    return StrCat("{\"factor\": ", factor_, "}");
  }

 private:
  double factor_;
  bool describable_;
};

TEST(ModelConfigTest, CustomLayersNeedGetConfigAndAFactory) {
  auto in = Input({2}, "x");
  Model opaque(in, Custom(std::make_shared<ScaleLayer>(3.0, false))(in));
  ASSERT_TRUE(opaque.Build().ok());
  auto none = opaque.GetConfig();
  ASSERT_EQ(none.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(none.status().message().find("layer 'scale' (Scale)"), std::string::npos) << none.status().message();

  Model m(in, Dense(2)(Custom(std::make_shared<ScaleLayer>(3.0))(in)));
  ASSERT_TRUE(m.Build().ok());
  auto config = m.GetConfig();
  ASSERT_TRUE(config.ok()) << config.status().message();
  auto unknown = ModelFromConfig(*config);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("layers[1] ('scale'): unknown layer class 'Scale'"), std::string::npos)
      << unknown.status().message();
  CustomObjects custom;
  custom["Scale"] = [](const std::string& text, const std::string&) -> StatusOr<std::shared_ptr<Layer>> {
    const size_t colon = text.find(':');
    if (colon == std::string::npos) return InvalidArgumentError("no factor in ", text);
    return std::shared_ptr<Layer>(std::make_shared<ScaleLayer>(std::stod(text.substr(colon + 1))));
  };
  auto rebuilt = ModelFromConfig(*config, custom);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().message();
  ASSERT_TRUE((*rebuilt)->SetWeights(m.weights()).ok());
  Tensor x = Tensor::FromVector<float>({1.0f, -2.0f}, Shape{1, 2});
  const auto want = RunModel(m, {{"x", x}});
  const auto got = RunModel(**rebuilt, {{"x", x}});
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].ToVector<float>(), want[0].ToVector<float>());
  // The factor made it through: with factor 1 instead the outputs differ.
  custom["Scale"] = [](const std::string&, const std::string&) -> StatusOr<std::shared_ptr<Layer>> {
    return std::shared_ptr<Layer>(std::make_shared<ScaleLayer>(1.0));
  };
  auto wrong = ModelFromConfig(*config, custom);
  ASSERT_TRUE(wrong.ok());
  ASSERT_TRUE((*wrong)->SetWeights(m.weights()).ok());
  EXPECT_NE(RunModel(**wrong, {{"x", x}})[0].ToVector<float>(), want[0].ToVector<float>());
}

}  // namespace
}  // namespace strata::nn
