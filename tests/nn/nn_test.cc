// nn: initializers, layer naming and building, Summary/ToDot, graphs of the Functional API, and layer numerics
// against direct computations in NHWC.
#include <gtest/gtest.h>

#include <cmath>

#include "core/random.h"
#include "strata/nn.h"

namespace strata::nn {
namespace {

std::unique_ptr<Model> SmallCnn() {
  auto in = Input({28, 28, 1}, "input_image");
  auto x = Conv2D(32, 3, {.activation = "relu"})(in);
  x = MaxPooling2D(2)(x);
  x = Conv2D(64, 3, {.activation = "relu"})(x);
  x = MaxPooling2D(2)(x);
  x = Flatten()(x);
  x = Dense(128, {.activation = "relu"})(x);
  x = Dropout(0.25)(x);
  auto logits = Dense(10)(x);
  return std::make_unique<Model>(std::vector<KerasTensor>{in}, std::vector<ModelOutput>{{"logits", logits}}, "cnn_small");
}

TEST(InitializerTest, GlorotUniformLimitsAndFans) {
  EXPECT_EQ(Initializer::Fans(Shape{3, 3, 3, 32}), std::make_pair(27.0, 288.0));
  Rng rng(1);
  Tensor k = Initializer::GlorotUniform().Make(Shape{784, 128}, rng);
  const double limit = 0.08111071;
  double max_abs = 0, sum_sq = 0;
  for (float v : k.values<float>()) max_abs = std::max(max_abs, double(std::abs(v))), sum_sq += double(v) * v;
  EXPECT_LE(max_abs, limit);
  EXPECT_GT(max_abs, 0.99 * limit);
  // Uniform(-L, L) has variance L^2 / 3.
  EXPECT_NEAR(sum_sq / double(k.num_elements()), limit * limit / 3, 2e-4);
  Tensor conv = Initializer::GlorotUniform().Make(Shape{3, 3, 3, 32}, rng);
  for (float v : conv.values<float>()) EXPECT_LE(std::abs(v), 0.13801311);
  Tensor he = Initializer::HeNormal().Make(Shape{100, 100}, rng);
  for (float v : he.values<float>()) EXPECT_LE(std::abs(v), 2 * std::sqrt(2.0 / 100) / 0.87962566103423978 + 1e-6);
  EXPECT_FALSE(Initializer::FromName("orthogonal").ok());
}

TEST(ModelTest, SmallCnnSummaryNamesAndParams) {
  auto m = SmallCnn();
  ASSERT_TRUE(m->Build(0).ok());
  EXPECT_EQ(m->CountParams(), 225034);
  auto summary = m->Summary();
  ASSERT_TRUE(summary.ok());
  for (const char* want : {"conv2d (Conv2D)", "(None, 26, 26, 32)", "max_pooling2d_1 (MaxPooling2D)", "(None, 5, 5, 64)",
                           "flatten (Flatten)", "(None, 1600)", "dense_1 (Dense)", "(None, 10)", "1,290",
                           "Total params: 225,034", "Non-trainable params: 0", "[(None, 28, 28, 1)]"})
    EXPECT_NE(summary->find(want), std::string::npos) << want << "\n" << *summary;
  auto dot = m->ToDot();
  ASSERT_TRUE(dot.ok());
  EXPECT_NE(dot->find("digraph"), std::string::npos);
  EXPECT_NE(dot->find("-> out0"), std::string::npos);
  std::vector<std::string> names;
  for (const auto& w : m->weight_specs()) names.push_back(w.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv2d/kernel", "conv2d/bias", "conv2d_1/kernel", "conv2d_1/bias",
                                             "dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"}));
  EXPECT_EQ(m->GetWeight("conv2d/kernel")->shape(), (Shape{3, 3, 1, 32}));
}

TEST(ModelTest, SameSeedSameWeightsOtherSeedOther) {
  auto a = SmallCnn(), b = SmallCnn(), c = SmallCnn();
  ASSERT_TRUE(a->Build(7).ok());
  ASSERT_TRUE(b->Build(7).ok());
  ASSERT_TRUE(c->Build(8).ok());
  for (const auto& [name, t] : a->weights()) {
    EXPECT_EQ(std::memcmp(t.raw_data(), b->weights().at(name).raw_data(), t.byte_size()), 0) << name;
  }
  EXPECT_NE(std::memcmp(a->weights().at("dense/kernel").raw_data(), c->weights().at("dense/kernel").raw_data(),
                        a->weights().at("dense/kernel").byte_size()),
            0);
}

TEST(ModelTest, BuildErrorsNameTheLayer) {
  auto in = Input({4}, "x");
  auto bad = Conv2D(8, 3)(in);  // rank-2 input
  Model m(in, bad);
  Status s = m.Build();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("layer 'conv2d' (Conv2D)"), std::string::npos) << s.message();

  auto other = Input({4}, "other");
  Model disconnected(in, Dense(2)(other));
  Status d = disconnected.Build();
  EXPECT_NE(d.message().find("not among the model's inputs"), std::string::npos) << d.message();

  Model undefined(in, Dense(2)(KerasTensor()));
  EXPECT_FALSE(undefined.Build().ok());
}

TEST(ModelTest, FunctionalTwoOutputsSharedLayerAndMerges) {
  auto a = Input({8}, "a");
  auto b = Input({8}, "b");
  auto shared = Dense(4, {.activation = "tanh"});
  auto fa = shared(a), fb = shared(b);
  auto sum = Add()({fa, fb});
  auto prod = Multiply()({fa, fb});
  auto cat = Concatenate()({sum, prod});
  auto logits = Dense(3)(cat);
  Model m({a, b}, {{"logits", logits}, {"features", cat}});
  ASSERT_TRUE(m.Build(1).ok());
  EXPECT_EQ(m.weight_specs().size(), 4u);  // the shared dense counts once
  EXPECT_EQ(m.output_names(), (std::vector<std::string>{"logits", "features"}));
  auto gm = m.InferenceModel();
  ASSERT_TRUE(gm.ok()) << gm.status().ToString();
  auto session = graph::Session::Create(std::make_shared<graph::Model>(*gm));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<Tensor> out;
  Tensor xa = Tensor::Zeros(DType::kFloat32, Shape{2, 8}), xb = Tensor::Zeros(DType::kFloat32, Shape{2, 8});
  for (int i = 0; i < 16; ++i) xa.data<float>()[i] = 0.1f * i, xb.data<float>()[i] = -0.05f * i;
  ASSERT_TRUE((*session)->Run({{"a", xa}, {"b", xb}}, &out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 8}));
  // features = [fa + fb, fa * fb] computed by hand from the shared kernel.
  const Tensor& k = m.weights().at("dense/kernel");
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 4; ++j) {
      double za = 0, zb = 0;
      for (int i = 0; i < 8; ++i) za += xa.data<float>()[r * 8 + i] * k.data<float>()[i * 4 + j], zb += xb.data<float>()[r * 8 + i] * k.data<float>()[i * 4 + j];
      EXPECT_NEAR(out[1].data<float>()[r * 8 + j], std::tanh(za) + std::tanh(zb), 1e-5);
      EXPECT_NEAR(out[1].data<float>()[r * 8 + 4 + j], std::tanh(za) * std::tanh(zb), 1e-5);
    }
}

// Conv2D (NHWC, Keras kernel layout, same padding with stride 2) against a direct loop.
TEST(LayerTest, Conv2DSamePaddingMatchesDirectNhwcLoop) {
  auto in = Input({6, 6, 2}, "x");
  Conv2DOptions o;
  o.strides = {2, 2};
  o.padding = "same";
  auto y = Conv2D(3, {3, 3}, o)(in);
  Model m(in, y);
  ASSERT_TRUE(m.Build(3).ok());
  Tensor bias = Tensor::FromVector<float>({0.1f, -0.2f, 0.3f});
  ASSERT_TRUE(m.SetWeights({{"conv2d/bias", bias}}).ok());
  auto gm = m.InferenceModel();
  ASSERT_TRUE(gm.ok());
  auto session = *graph::Session::Create(std::make_shared<graph::Model>(*gm));
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{1, 6, 6, 2});
  for (int i = 0; i < 72; ++i) x.data<float>()[i] = std::sin(0.3f * i);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"x", x}}, &out).ok());
  ASSERT_EQ(out[0].shape(), (Shape{1, 3, 3, 3}));
  // in=6, k=3, s=2 -> out 3, pad (0, 1): the extra pixel bottom/right.
  const float* k = m.weights().at("conv2d/kernel").data<float>();
  for (int oh = 0; oh < 3; ++oh)
    for (int ow = 0; ow < 3; ++ow)
      for (int f = 0; f < 3; ++f) {
        double acc = bias.data<float>()[f];
        for (int kh = 0; kh < 3; ++kh)
          for (int kw = 0; kw < 3; ++kw)
            for (int c = 0; c < 2; ++c) {
              const int ih = oh * 2 + kh, iw = ow * 2 + kw;
              if (ih >= 6 || iw >= 6) continue;
              acc += x.data<float>()[(ih * 6 + iw) * 2 + c] * k[((kh * 3 + kw) * 2 + c) * 3 + f];
            }
        EXPECT_NEAR(out[0].data<float>()[(oh * 3 + ow) * 3 + f], acc, 1e-5) << oh << "," << ow << "," << f;
      }
}

TEST(LayerTest, FlattenKeepsNhwcOrderAfterConvAndPool) {
  auto in = Input({4, 4, 2}, "x");
  auto p = MaxPooling2D(2)(in);  // channels-first inside
  auto f = Flatten()(p);
  Model m(in, f);
  ASSERT_TRUE(m.Build().ok());
  auto session = *graph::Session::Create(std::make_shared<graph::Model>(*m.InferenceModel()));
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{1, 4, 4, 2});
  for (int i = 0; i < 32; ++i) x.data<float>()[i] = float(i);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"x", x}}, &out).ok());
  // Max of each 2x2 window per channel, flattened as (h, w, c).
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{10, 11, 14, 15, 26, 27, 30, 31}));
}

TEST(LayerTest, ActivationsBatchNormGapAndEmbedding) {
  auto in = Input({2, 2, 3}, "x");
  auto bn = BatchNormalization()(in);
  auto gap = GlobalAveragePooling2D()(bn);
  auto act = Activation("gelu")(gap);
  auto sm = Activation("softmax")(act);
  Model m(in, sm);
  ASSERT_TRUE(m.Build().ok());
  EXPECT_EQ(m.CountParams(true), 6);
  EXPECT_EQ(m.CountParams(false), 12);
  auto session = *graph::Session::Create(std::make_shared<graph::Model>(*m.InferenceModel()));
  Tensor x = Tensor::Empty(DType::kFloat32, Shape{1, 2, 2, 3});
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = float(i % 3);  // channel c has value c everywhere
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"x", x}}, &out).ok());
  // BN inference with moving stats (0, 1): c / sqrt(1 + 1e-3); gelu; softmax.
  std::vector<double> g;
  for (int c = 0; c < 3; ++c) {
    const double v = c / std::sqrt(1.001);
    g.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
  }
  const double z = std::exp(g[0]) + std::exp(g[1]) + std::exp(g[2]);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(out[0].data<float>()[c], std::exp(g[c]) / z, 1e-5);

  auto ids = Input({3}, "ids", DType::kInt64);
  auto emb = Embedding(10, 4)(ids);
  Model em(ids, emb);
  ASSERT_TRUE(em.Build().ok());
  auto es = *graph::Session::Create(std::make_shared<graph::Model>(*em.InferenceModel()));
  ASSERT_TRUE(es->Run({{"ids", Tensor::FromVector<int64_t>({2, 0, 9}, Shape{1, 3})}}, &out).ok());
  EXPECT_EQ(out[0].shape(), (Shape{1, 3, 4}));
  EXPECT_EQ(out[0].data<float>()[0], em.weights().at("embedding/embeddings").data<float>()[8]);
}

// A custom layer: its weight's shape comes from the input spec in Build(), its IR from Call().
class ScaleLayer final : public Layer {
 public:
  ScaleLayer() : Layer("Scale", "") {}
  Status Build(const std::vector<TensorSpec>& inputs) override {
    AddWeight("scale", {inputs[0].shape.back()}, Initializer::Constant(2.0));
    return Status::OK();
  }
  StatusOr<std::vector<Value>> Call(CallContext& ctx, const std::vector<Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(std::string x, ctx.ChannelsLast(in[0]));
    return std::vector<Value>{{ctx.Emit1("Mul", {x, ctx.Weight("scale")}), false}};
  }
};

TEST(LayerTest, CustomLayerBuildsWeightsFromTheInputSpec) {
  auto in = Input({3}, "x");
  auto y = Custom(std::make_shared<ScaleLayer>())(in);
  Model m(in, y);
  ASSERT_TRUE(m.Build().ok());
  EXPECT_EQ(m.weight_specs()[0].name, "scale/scale");
  EXPECT_EQ(m.weight_specs()[0].shape, (Shape{3}));
  auto session = *graph::Session::Create(std::make_shared<graph::Model>(*m.InferenceModel()));
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"x", Tensor::FromVector<float>({1, 2, 3}, Shape{1, 3})}}, &out).ok());
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(ModelTest, SequentialChainsLayers) {
  auto m = Sequential({4}, {Dense(8, {.activation = "relu"}), Dropout(0.5), Dense(2, {.activation = "softmax"})});
  ASSERT_TRUE(m->Build().ok());
  EXPECT_EQ(m->input_names(), (std::vector<std::string>{"input"}));
  EXPECT_EQ(m->output_names(), (std::vector<std::string>{"output"}));
  EXPECT_EQ(m->CountParams(), 4 * 8 + 8 + 8 * 2 + 2);
  EXPECT_NE(m->Summary()->find("Model: \"sequential\""), std::string::npos);
}

TEST(LossMetricTest, MetricsFollowKeras) {
  auto acc = *MakeMetric("accuracy", Loss::SparseCategoricalCrossentropy(true));
  ASSERT_TRUE(acc->Update(Tensor::FromVector<int64_t>({0, 2}), Tensor::FromVector<float>({0.9f, 0.1f, 0.0f, 0.2f, 0.5f, 0.3f}, Shape{2, 3})).ok());
  EXPECT_DOUBLE_EQ(acc->Result(), 0.5);
  auto top2 = *MakeMetric("sparse_top_k_categorical_accuracy@2", Loss::SparseCategoricalCrossentropy(true));
  ASSERT_TRUE(top2->Update(Tensor::FromVector<int64_t>({0, 2}), Tensor::FromVector<float>({0.9f, 0.1f, 0.0f, 0.2f, 0.5f, 0.3f}, Shape{2, 3})).ok());
  EXPECT_DOUBLE_EQ(top2->Result(), 1.0);
  auto prec = *MakeMetric("precision", Loss::BinaryCrossentropy());
  auto rec = *MakeMetric("recall", Loss::BinaryCrossentropy());
  auto auc = *MakeMetric("auc", Loss::BinaryCrossentropy());
  Tensor yt = Tensor::FromVector<float>({1, 0, 1, 0}), yp = Tensor::FromVector<float>({0.9f, 0.8f, 0.4f, 0.1f});
  for (auto* m : {prec.get(), rec.get(), auc.get()}) ASSERT_TRUE(m->Update(yt, yp).ok());
  EXPECT_DOUBLE_EQ(prec->Result(), 0.5);
  EXPECT_DOUBLE_EQ(rec->Result(), 0.5);
  EXPECT_NEAR(auc->Result(), 0.75, 1e-9);  // 3 of 4 positive/negative pairs ordered correctly
  EXPECT_FALSE(MakeMetric("f1", Loss{}).ok());
  EXPECT_EQ(Loss::FromName("mse")->kind, Loss::Kind::kMeanSquaredError);
  EXPECT_FALSE(Loss::FromName("hinge").ok());
}

}  // namespace
}  // namespace strata::nn
