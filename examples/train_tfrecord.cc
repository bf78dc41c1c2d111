// Example: train a Functional model with a custom layer on TFRecords, using only the installed strata package.
//
//   train_tfrecord WORK_DIR
//
// Writes WORK_DIR/train-0000{0,1}.tfrecord (tf.train.Examples with a float feature "x" of 4 values and an int64
// "label": 1 when x0 + x1 - x2 > 0), trains a small classifier on them, prints the accuracy, saves the model as
// WORK_DIR/model.onnx and exits non-zero unless the validation accuracy reaches 0.9.
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "strata/data.h"
#include "strata/example.h"
#include "strata/nn.h"
#include "strata/onnx.h"
#include "strata/records.h"
#include "strata/train.h"

using namespace strata;

namespace {

// A custom layer: multiplies every feature by its own learned scale (Keras's subclassed Layer, in strata's API).
class FeatureScale final : public nn::Layer {
 public:
  FeatureScale() : nn::Layer("FeatureScale", "") {}
  Status Build(const std::vector<nn::TensorSpec>& inputs) override {
    AddWeight("scale", {inputs[0].shape.back()}, nn::Initializer::Ones());
    return Status::OK();
  }
  StatusOr<std::vector<nn::Value>> Call(nn::CallContext& ctx, const std::vector<nn::Value>& in) override {
    STRATA_ASSIGN_OR_RETURN(std::string x, ctx.ChannelsLast(in[0]));
    return std::vector<nn::Value>{{ctx.Emit1("Mul", {x, ctx.Weight("scale")}), false}};
  }
};

Status WriteShard(const std::string& path, int n, std::mt19937& gen) {
  std::normal_distribution<float> normal;
  STRATA_ASSIGN_OR_RETURN(auto writer, io::RecordFileWriter::Open(path));
  for (int i = 0; i < n; ++i) {
    std::vector<float> x(4);
    for (float& v : x) v = normal(gen);
    io::Example ex;
    ex.features["x"] = io::Feature::Floats(x);
    ex.features["label"] = io::Feature::Int64s({x[0] + x[1] - x[2] > 0 ? 1 : 0});
    STRATA_RETURN_IF_ERROR(writer->Write(io::SerializeExample(ex)));
  }
  return writer->Close();
}

data::Dataset Pipeline(std::vector<std::string> files, bool shuffle) {
  data::Dataset ds = data::Dataset::TfRecord(std::move(files))
                         .Map(data::ParseExampleFn({io::FeatureSpec::FixedLen("x", DType::kFloat32, {4}),
                                                    io::FeatureSpec::FixedLen("label", DType::kInt64)}));
  if (shuffle) ds = ds.Shuffle(1024);
  return ds.Batch(32);
}

Status Run(const std::string& dir) {
  std::mt19937 gen(7);
  const std::vector<std::string> train = {dir + "/train-00000.tfrecord", dir + "/train-00001.tfrecord"};
  const std::string val = dir + "/val-00000.tfrecord";
  for (const auto& f : train) STRATA_RETURN_IF_ERROR(WriteShard(f, 1024, gen));
  STRATA_RETURN_IF_ERROR(WriteShard(val, 512, gen));

  auto in = nn::Input({4}, "x");
  auto h = nn::Custom(std::make_shared<FeatureScale>())(in);
  h = nn::Dense(16, {.activation = "relu"})(h);
  auto logits = nn::Dense(2)(h);
  nn::Model model({in}, {{"logits", logits}}, "example_classifier");

  STRATA_ASSIGN_OR_RETURN(
      auto trainer,
      train::Trainer::Create(&model, {.loss = {{"logits", nn::Loss::SparseCategoricalCrossentropy(true)}},
                                      .metrics = {{"logits", {"accuracy"}}}},
                             {.seed = 1}));
  STRATA_ASSIGN_OR_RETURN(auto history, trainer->Fit(Pipeline(train, true),
                                                     {.epochs = 5, .validation_data = Pipeline({val}, false),
                                                      .verbose = 2}));
  const double acc = history.history.at("val_accuracy").back();
  std::printf("validation accuracy %.4f\n", acc);

  STRATA_ASSIGN_OR_RETURN(graph::Model inference, model.InferenceModel());
  STRATA_RETURN_IF_ERROR(onnx::SaveModel(inference, dir + "/model.onnx"));
  std::printf("saved %s/model.onnx\n", dir.c_str());
  if (acc < 0.9) return InternalError("validation accuracy ", acc, " is below 0.9: training did not work");
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s WORK_DIR\n", argv[0]);
    return 2;
  }
  Status s = Run(argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "train_tfrecord: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
