#include "serve/core/servable.h"

#include <algorithm>
#include <filesystem>

#include "core/file_util.h"
#include "serve/core/storage.h"
#include "strata/onnx.h"

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
    if (c == "saved_model.pb" || c == "saved_model.pbtxt")
      return InvalidArgumentError("version directory ", dir, " holds a TensorFlow SavedModel (", c,
                                  "); this server serves ONNX models: expected ", want);
  }
  for (const auto& c : children) {
    if (c.size() > 5 && c.compare(c.size() - 5, 5, ".onnx") == 0)
      return InvalidArgumentError("version directory ", dir, " has ", c, " but the model file must be named ",
                                  kModelFileName, ": expected ", want);
  }
  return NotFoundError("no model file ", want, children.empty() ? " (the directory is empty)"
                                                                : StrCat(" (found ", StrJoin(children, ", "), ")"),
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
  if (!FileExists(path)) return ExplainMissingModel(dir);
  auto model = onnx::LoadModel(path);
  if (!model.ok()) return Status(model.status().code(), StrCat("loading ", path, ": ", model.status().message()));
  auto shared = std::make_shared<graph::Model>(std::move(model).value());
  graph::SessionOptions so;
  so.intra_op_threads = options.intra_op_threads;
  so.memory_limit_bytes = static_cast<size_t>(std::max<int64_t>(0, options.memory_limit_bytes));
  so.plan_cache_max_plans = static_cast<size_t>(std::max<int64_t>(0, options.plan_cache_max_plans));
  so.plan_cache_max_bytes = static_cast<size_t>(std::max<int64_t>(0, options.plan_cache_max_bytes));
  so.conv_algorithm = options.conv_algorithm;
  so.precision = options.precision;
  const int64_t weights = WeightBytes(*shared);
  auto session = graph::Session::Create(shared, so);
  if (!session.ok())
    return Status(session.status().code(), StrCat("compiling ", path, ": ", session.status().message()));
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

const SignatureDef* Servable::FindSignature(const std::string& key) const {
  auto it = signatures_.find(key.empty() ? std::string(kDefaultSignature) : key);
  return it == signatures_.end() ? nullptr : &it->second;
}

Status Servable::Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetch,
                     std::vector<Tensor>* outputs) const {
  return session_->Run(feeds, fetch, outputs);
}

}  // namespace strata::serve
