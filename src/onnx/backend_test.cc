#include "onnx/backend_test.h"

#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/file_util.h"
#include "onnx/tensor_proto.h"
#include "ops/op_util.h"
#include "strata/onnx.h"

namespace strata::onnx {
namespace {

struct DataSet {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
};

// Compares one output; returns "" when equal within tolerance, else a description of the first mismatch.
std::string CompareTensors(const Tensor& got, const Tensor& want, const BackendTestOptions& opt) {
  if (got.dtype() != want.dtype())
    return StrCat("dtype ", DTypeName(got.dtype()), ", expected ", DTypeName(want.dtype()));
  if (got.shape() != want.shape())
    return StrCat("shape ", got.shape().ToString(), ", expected ", want.shape().ToString());
  const int64_t n = got.num_elements();
  if (got.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i)
      if (got.data<std::string>()[i] != want.data<std::string>()[i])
        return StrCat("element ", i, " is \"", got.data<std::string>()[i], "\", expected \"", want.data<std::string>()[i], "\"");
    return "";
  }
  if (got.dtype() == DType::kBool) {
    for (int64_t i = 0; i < n; ++i)
      if (got.data<bool>()[i] != want.data<bool>()[i]) return StrCat("element ", i, " differs (bool)");
    return "";
  }
  std::string diff;
  int64_t bad = 0;
  Status s = ops::DispatchNumeric(got.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = got.data<T>();
    const T* w = want.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const double a = static_cast<double>(ops::ToCompute(g[i]));
      const double b = static_cast<double>(ops::ToCompute(w[i]));
      bool ok;
      if (IsFloatingPoint(got.dtype())) {
        ok = (std::isnan(a) && std::isnan(b)) || a == b || std::fabs(a - b) <= opt.atol + opt.rtol * std::fabs(b);
      } else {
        ok = a == b;
      }
      if (!ok) {
        if (bad == 0) diff = StrCat("element ", i, " is ", a, ", expected ", b);
        ++bad;
      }
    }
    return Status::OK();
  });
  if (!s.ok()) return s.message();
  if (bad > 0) return StrCat(diff, " (", bad, " of ", n, " elements differ)");
  return "";
}

bool IsUnsupported(const Status& s) { return s.code() == StatusCode::kUnimplemented; }

// ONNX's test generator stores bfloat16 data as uint16 tensors (numpy has no bfloat16); when the model declares
// bfloat16, the bits are reinterpreted.
Tensor AsDeclared(Tensor t, DType declared) {
  if (declared == DType::kBFloat16 && t.dtype() == DType::kUInt16)
    return Tensor::Wrap(DType::kBFloat16, t.shape(), t.raw_data(), t.buffer());
  return t;
}

}  // namespace

std::string_view BackendOutcomeName(BackendOutcome o) {
  switch (o) {
    case BackendOutcome::kPass: return "PASS";
    case BackendOutcome::kFail: return "FAIL";
    case BackendOutcome::kUnsupported: return "UNSUPPORTED";
  }
  return "?";
}

std::vector<std::string> ListBackendTests(const std::string& suite_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(suite_dir, ec)) {
    if (e.is_directory() && FileExists((e.path() / "model.onnx").string())) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

BackendTestResult RunBackendTest(const std::string& dir, const BackendTestOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  BackendTestResult r;
  r.name = Basename(dir);
  r.suite = Basename(Dirname(dir));
  auto finish = [&](BackendOutcome o, std::string reason) {
    r.outcome = o;
    r.reason = std::move(reason);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };

  auto model_or = LoadModel(JoinPath(dir, "model.onnx"));
  if (!model_or.ok())
    return finish(IsUnsupported(model_or.status()) ? BackendOutcome::kUnsupported : BackendOutcome::kFail,
                  model_or.status().message());
  auto model = std::make_shared<graph::Model>(std::move(model_or).value());
  for (const auto& in : model->graph.inputs)
    if (in.dtype == DType::kUndefined)
      return finish(BackendOutcome::kUnsupported, StrCat("input '", in.name, "' is not a tensor (sequence/optional)"));
  for (const auto& out : model->graph.outputs)
    if (out.dtype == DType::kUndefined)
      return finish(BackendOutcome::kUnsupported, StrCat("output '", out.name, "' is not a tensor (sequence/optional)"));

  std::unique_ptr<graph::Session> session;
  if (!options.reference) {
    auto s = graph::Session::Create(model);
    if (!s.ok())
      return finish(IsUnsupported(s.status()) ? BackendOutcome::kUnsupported : BackendOutcome::kFail, s.status().message());
    session = std::move(s).value();
  }

  int sets = 0;
  for (int k = 0;; ++k) {
    const std::string set_dir = JoinPath(dir, StrCat("test_data_set_", k));
    if (!IsDirectory(set_dir)) break;
    ++sets;
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (size_t i = 0; i < model->graph.inputs.size(); ++i) {
      const std::string path = JoinPath(set_dir, StrCat("input_", i, ".pb"));
      if (!FileExists(path)) break;  // optional trailing inputs may be absent
      auto t = ReadTensorProtoFile(path);
      if (!t.ok()) return finish(BackendOutcome::kFail, t.status().message());
      feeds.emplace_back(model->graph.inputs[i].name, AsDeclared(std::move(t).value(), model->graph.inputs[i].dtype));
    }
    std::vector<Tensor> got;
    Status s = options.reference ? graph::RunReference(*model, feeds, &got) : session->Run(feeds, &got);
    if (!s.ok())
      return finish(IsUnsupported(s) ? BackendOutcome::kUnsupported : BackendOutcome::kFail,
                    StrCat("data set ", k, ": ", s.message()));
    for (size_t i = 0; i < model->graph.outputs.size(); ++i) {
      const std::string path = JoinPath(set_dir, StrCat("output_", i, ".pb"));
      auto want = ReadTensorProtoFile(path);
      if (!want.ok()) return finish(BackendOutcome::kFail, want.status().message());
      if (i >= got.size()) return finish(BackendOutcome::kFail, StrCat("output ", i, " missing"));
      std::string diff = CompareTensors(got[i], AsDeclared(*want, model->graph.outputs[i].dtype), options);
      if (!diff.empty())
        return finish(BackendOutcome::kFail,
                      StrCat("data set ", k, " output '", model->graph.outputs[i].name, "': ", diff));
    }
  }
  if (sets == 0) return finish(BackendOutcome::kFail, "no test_data_set_* folders");
  return finish(BackendOutcome::kPass, "");
}

}  // namespace strata::onnx
