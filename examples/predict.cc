// Example: an embedded predictor. Loads the ONNX model that train_tfrecord saved and classifies the records of a
// TFRecord file inside this process, using only the installed strata package.
//
//   predict MODEL.onnx RECORDS.tfrecord
//
// Prints the accuracy against the records' labels; exits non-zero below 0.9 or on any error.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "strata/example.h"
#include "strata/graph.h"
#include "strata/onnx.h"
#include "strata/records.h"

using namespace strata;

namespace {

Status Run(const std::string& model_path, const std::string& records_path) {
  STRATA_ASSIGN_OR_RETURN(graph::Model model, onnx::LoadModel(model_path));
  STRATA_ASSIGN_OR_RETURN(auto session, graph::Session::Create(std::make_shared<graph::Model>(std::move(model))));
  STRATA_ASSIGN_OR_RETURN(auto reader, io::RecordFileReader::Open(records_path));

  // All records as one batch.
  std::vector<float> x;
  std::vector<int64_t> labels;
  std::string record;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(bool more, reader->Read(&record));
    if (!more) break;
    STRATA_ASSIGN_OR_RETURN(io::Example ex, io::ParseExample(record));
    const auto& f = ex.features.at("x").float_list;
    if (f.size() != 4) return InvalidArgumentError("record ", labels.size(), ": x has ", f.size(), " values, not 4");
    x.insert(x.end(), f.begin(), f.end());
    labels.push_back(ex.features.at("label").int64_list.at(0));
  }
  if (labels.empty()) return InvalidArgumentError(records_path, " holds no records");
  const int64_t n = static_cast<int64_t>(labels.size());

  std::vector<Tensor> out;
  STRATA_RETURN_IF_ERROR(session->Run({{"x", Tensor::FromVector<float>(x, Shape{n, 4})}}, &out));
  const std::vector<float> logits = out.at(0).ToVector<float>();
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) correct += ((logits[2 * i + 1] > logits[2 * i]) ? 1 : 0) == labels[i];
  const double acc = static_cast<double>(correct) / n;
  std::printf("predicted %lld records, accuracy %.4f\n", static_cast<long long>(n), acc);
  if (acc < 0.9) return InternalError("accuracy ", acc, " is below 0.9");
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL.onnx RECORDS.tfrecord\n", argv[0]);
    return 2;
  }
  Status s = Run(argv[1], argv[2]);
  if (!s.ok()) {
    std::fprintf(stderr, "predict: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
