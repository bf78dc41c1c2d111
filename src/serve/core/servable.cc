#include "serve/core/servable.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/file_util.h"
#include "serve/core/storage.h"
#include "strata/onnx.h"
#include "tf/saved_model.h"
#include "tf/tflite.h"

namespace strata::serve {

namespace fs = std::filesystem;

namespace {

// The error for a version directory without model.onnx: what is there and what should be.
Status ExplainMissingModel(const std::string& dir) {
  std::vector<std::string> children;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    children.push_back(it->path().filename().string());
  std::sort(children.begin(), children.end());
  const std::string want = JoinPath(dir, kModelFileName);
  for (const auto& c : children) {
    if (c == "saved_model.pbtxt")
      return InvalidArgumentError("version directory ", dir, " holds a text SavedModel (", c,
                                  "); this server reads binary saved_model.pb files or ", want);
  }
  for (const auto& c : children) {
    if (c.size() > 5 && c.compare(c.size() - 5, 5, ".onnx") == 0)
      return InvalidArgumentError("version directory ", dir, " has ", c, " but the model file must be named ",
                                  kModelFileName, ": expected ", want);
  }
  return NotFoundError(
      "no model file ", want, " (or ", kTfliteModelFileName, ", or a SavedModel)",
      children.empty() ? " (the directory is empty)" : StrCat(" (found ", StrJoin(children, ", "), ")"),
      "; expected <base_path>/<version>/", kModelFileName);
}

int64_t WeightBytes(const graph::Model& m) {
  int64_t total = 0;
  for (const auto& [name, t] : m.graph.initializers)
    if (t.defined() && t.dtype() != DType::kString) total += static_cast<int64_t>(t.byte_size());
  return total;
}

}  // namespace

StatusOr<std::shared_ptr<Servable>> Servable::Load(const std::string& name, int64_t version, const std::string& dir,
                                                   const LoadOptions& options) {
  const std::string path = JoinPath(dir, kModelFileName);
  graph::SessionOptions so;
  so.intra_op_threads = options.intra_op_threads;
  so.memory_limit_bytes = static_cast<size_t>(std::max<int64_t>(0, options.memory_limit_bytes));
  so.plan_cache_max_plans = static_cast<size_t>(std::max<int64_t>(0, options.plan_cache_max_plans));
  so.plan_cache_max_bytes = static_cast<size_t>(std::max<int64_t>(0, options.plan_cache_max_bytes));
  so.conv_algorithm = options.conv_algorithm;
  so.precision = options.precision;
  so.input_signature = options.input_signature;
  so.profiler = options.profiler;
  const bool onnx_file = FileExists(path);
  if (!onnx_file && tf::IsSavedModelDir(dir)) return LoadSavedModel(name, version, dir, so);
  const std::string tflite_path = JoinPath(dir, kTfliteModelFileName);
  const bool tflite = !onnx_file && FileExists(tflite_path);
  if (!onnx_file && !tflite) return ExplainMissingModel(dir);
  // A TensorFlow Lite flatbuffer (float32; src/tf/tflite_import.cc) runs as the strata IR it converts to.
  auto model = tflite ? tf::LoadTflite(tflite_path) : onnx::LoadModel(path);
  if (!model.ok() && tflite) return model.status();  // the TFLite reader's errors name the file
  if (!model.ok()) return Status(model.status().code(), StrCat("loading ", path, ": ", model.status().message()));
  auto shared = std::make_shared<graph::Model>(std::move(model).value());
  const int64_t weights = WeightBytes(*shared);
  auto session = graph::Session::Create(shared, so);
  if (!session.ok())
    return Status(session.status().code(),
                  StrCat("compiling ", tflite ? tflite_path : path, ": ", session.status().message()));
  auto s = FromSession(name, version, dir, std::move(session).value());
  std::const_pointer_cast<Servable>(s)->weight_bytes_ = weights;
  return s;
}

std::shared_ptr<Servable> Servable::FromSession(const std::string& name, int64_t version, const std::string& dir,
                                                std::unique_ptr<graph::Session> session) {
  std::shared_ptr<Servable> s(new Servable());
  s->name_ = name;
  s->version_ = version;
  s->dir_ = dir;
  s->signatures_ = SynthesizeSignatures(session->inputs(), session->outputs());
  s->weight_bytes_ = WeightBytes(session->model());
  s->session_ = std::move(session);
  return s;
}

namespace {

std::vector<TensorInfo> ToTensorInfos(const std::vector<tf::SignatureTensor>& ts) {
  std::vector<TensorInfo> out;
  for (const auto& t : ts) out.push_back({t.alias, t.name, t.dtype, t.shape});
  return out;
}

}  // namespace

StatusOr<std::shared_ptr<Servable>> Servable::LoadSavedModel(const std::string& name, int64_t version,
                                                             const std::string& dir,
                                                             const graph::SessionOptions& so) {
  STRATA_ASSIGN_OR_RETURN(tf::SavedModelImport sm, tf::LoadSavedModel(dir));
  std::shared_ptr<Servable> s(new Servable());
  s->name_ = name;
  s->version_ = version;
  s->dir_ = dir;
  const tf::ImportedSignature* def = sm.Default();
  for (const auto& sig : sm.signatures) {
    auto session = graph::Session::Create(sig.model, so);
    if (!session.ok())
      return Status(session.status().code(), StrCat("compiling signature '", sig.key, "' of SavedModel ", dir, ": ",
                                                    session.status().message()));
    SignatureDef sd;
    sd.method_name = sig.method_name;
    sd.inputs = ToTensorInfos(sig.inputs);
    sd.outputs = ToTensorInfos(sig.outputs);
    sd.examples.features = ToTensorInfos(sig.features);
    sd.strict_shapes = false;
    MapExamples(&sd);
    s->signatures_.emplace(sig.key, std::move(sd));
    if (&sig == def) {
      s->session_ = std::move(session).value();
    } else {
      s->more_sessions_.push_back(std::move(session).value());
    }
  }
  // Initializers are shared per variable within a signature only; count each signature's weights once per name.
  std::map<std::string, int64_t> weights;
  for (const auto& sig : sm.signatures)
    for (const auto& [n, t] : sig.model->graph.initializers)
      if (t.defined() && t.dtype() != DType::kString) weights[n] = static_cast<int64_t>(t.byte_size());
  for (const auto& [n, b] : weights) s->weight_bytes_ += b;
  return s;
}

const SignatureDef* Servable::FindSignature(const std::string& key) const {
  auto it = signatures_.find(key.empty() ? std::string(kDefaultSignature) : key);
  return it == signatures_.end() ? nullptr : &it->second;
}

Status Servable::Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetch,
                     std::vector<Tensor>* outputs) const {
  if (more_sessions_.empty()) return session_->Run(feeds, fetch, outputs);
  // A SavedModel: the signature session that takes exactly these inputs and has these outputs.
  std::set<std::string> fed;
  for (const auto& [n, t] : feeds) fed.insert(n);
  auto fits = [&](const graph::Session& s) {
    std::set<std::string> ins;
    for (const auto& e : s.inputs()) ins.insert(e.name);
    if (ins != fed) return false;
    for (const auto& f : fetch) {
      bool found = false;
      for (const auto& e : s.outputs()) found |= e.name == f;
      if (!found) return false;
    }
    return true;
  };
  if (fits(*session_)) return session_->Run(feeds, fetch, outputs);
  for (const auto& s : more_sessions_)
    if (fits(*s)) return s->Run(feeds, fetch, outputs);
  return InvalidArgumentError("no signature of model '", name_, "' version ", version_, " takes exactly the inputs {",
                              StrJoin(fed, ", "), "} and produces {", StrJoin(fetch, ", "),
                              "} (a signature that takes serialized tf.Examples serves Classify and Regress only)");
}

}  // namespace strata::serve
