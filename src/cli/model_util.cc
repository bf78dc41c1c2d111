#include "cli/model_util.h"

#include <cstdio>

#include "core/random.h"
#include "core/file_util.h"
#include "strata/onnx.h"
#include "tf/saved_model.h"

namespace strata::cli {

StatusOr<std::shared_ptr<graph::Model>> LoadAnyModel(const std::string& path, const std::string& signature,
                                                     LoadedModel* aliases) {
  if (IsDirectory(path) && !tf::IsSavedModelDir(path) && FileExists(JoinPath(path, "model.onnx")))
    return LoadAnyModel(JoinPath(path, "model.onnx"), signature, aliases);
  if (IsDirectory(path) && tf::IsSavedModelDir(path)) {
    STRATA_ASSIGN_OR_RETURN(tf::SavedModelImport sm, tf::LoadSavedModel(path));
    const tf::ImportedSignature* sig = signature.empty() ? sm.Default() : sm.Find(signature);
    if (!sig) {
      std::vector<std::string> keys;
      for (const auto& s : sm.signatures) keys.push_back(s.key);
      return NotFoundError("SavedModel ", path, " has no signature '", signature, "' (it has ", StrJoin(keys, ", "),
                           ")");
    }
    if (aliases) {
      for (const auto& t : sig->features.empty() ? sig->inputs : sig->features)
        aliases->input_aliases[t.alias] = t.name;
      for (const auto& t : sig->outputs) aliases->output_aliases[t.alias] = t.name;
    }
    // The imported graph accepts any shape (as TF does). For the CLI (bench's random inputs, inspect, convert's ONNX
    // file) its inputs and outputs declare the signature's shapes, with the leading dimension a symbolic "batch"
    // and other unknown dimensions symbolic too.
    auto m = std::make_shared<graph::Model>(*sig->model);
    auto declared = [&](const std::string& name) -> const tf::SignatureTensor* {
      for (const auto* list : {&sig->inputs, &sig->outputs, &sig->features})
        for (const auto& t : *list)
          if (t.name == name) return &t;
      return nullptr;
    };
    for (auto* vis : {&m->graph.inputs, &m->graph.outputs}) {
      for (auto& vi : *vis) {
        const tf::SignatureTensor* t = declared(vi.name);
        if (!t || !t->shape.rank_known) continue;
        vi.shape = t->shape;
        for (size_t i = 0; i < vi.shape.dims.size(); ++i)
          if (i == 0 || !vi.shape.dims[i].known())
            vi.shape.dims[i] = Dim::Symbol(i == 0 ? std::string("batch") : StrCat(SafeFileName(vi.name), "_d", i));
      }
    }
    return m;
  }
  STRATA_ASSIGN_OR_RETURN(graph::Model m, onnx::LoadModel(path));
  return std::make_shared<graph::Model>(std::move(m));
}

StatusOr<LoadedModel> LoadModelSession(const std::string& path, int threads, size_t memory_limit_bytes,
                                       graph::ConvAlgorithm conv_algorithm, graph::Precision precision,
                                       const std::string& input_signature,
                                       std::shared_ptr<graph::Profiler> profiler) {
  LoadedModel out;
  STRATA_ASSIGN_OR_RETURN(out.model, LoadAnyModel(path, "", &out));
  graph::SessionOptions opts;
  if (!input_signature.empty()) {
    STRATA_ASSIGN_OR_RETURN(opts.input_signature, graph::ParseInputSignature(input_signature, "--input_signature"));
    for (graph::SignatureEntry& e : opts.input_signature) {
      auto alias = out.input_aliases.find(e.name);  // a SavedModel signature's input alias
      if (alias != out.input_aliases.end()) e.name = alias->second;
    }
  }
  opts.profiler = std::move(profiler);
  opts.intra_op_threads = threads;
  opts.memory_limit_bytes = memory_limit_bytes;
  opts.conv_algorithm = conv_algorithm;
  opts.precision = precision;
  auto s = graph::Session::Create(out.model, opts);
  if (!s.ok()) return Status(s.status()).WithContext(path);
  out.session = std::move(s).value();
  return out;
}

StatusOr<std::pair<std::string, std::string>> SplitAssignment(const std::string& arg, const char* flag) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    return InvalidArgumentError(flag, " expects NAME=VALUE, got '", arg, "'");
  return std::make_pair(arg.substr(0, eq), arg.substr(eq + 1));
}

StatusOr<std::vector<int64_t>> ParseDims(const std::string& text, const std::string& where) {
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    char* stop = nullptr;
    const long long v = std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || v < 0)
      return InvalidArgumentError(where, ": expected comma-separated non-negative integers, got '", text, "'");
    dims.push_back(v);
    pos = end + 1;
  }
  return dims;
}

StatusOr<std::vector<std::pair<std::string, Shape>>> ResolveInputShapes(
    const std::vector<graph::SignatureEntry>& inputs, int64_t batch,
    const std::map<std::string, std::vector<int64_t>>& overrides) {
  for (const auto& [name, dims] : overrides) {
    bool found = false;
    for (const auto& in : inputs) found |= in.name == name;
    if (!found) return InvalidArgumentError("--shape names '", name, "', which is not an input of the model");
  }
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& in : inputs) {
    auto ov = overrides.find(in.name);
    if (ov != overrides.end()) {
      Shape s(ov->second);
      if (!in.shape.Accepts(s))
        return InvalidArgumentError("--shape ", in.name, "=", s.ToString(), " does not fit the model's ", in.shape.ToString());
      out.emplace_back(in.name, s);
      continue;
    }
    if (!in.shape.rank_known)
      return InvalidArgumentError("input '", in.name, "' has unknown rank; pass --shape ", in.name, "=D0,D1,...");
    Shape s;
    for (size_t i = 0; i < in.shape.dims.size(); ++i) {
      const Dim& d = in.shape.dims[i];
      if (d.known()) {
        s.PushBack(d.value);
      } else if (i == 0) {
        s.PushBack(batch);
      } else {
        return InvalidArgumentError("input '", in.name, "' dimension ", i, " (", d.symbol.empty() ? "?" : d.symbol,
                                    ") is not fixed; pass --shape ", in.name, "=", in.shape.ToString());
      }
    }
    out.emplace_back(in.name, s);
  }
  return out;
}

StatusOr<Tensor> RandomInput(DType dtype, const Shape& shape, uint64_t seed) {
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  Rng rng(seed);
  const int64_t n = t.num_elements();
  switch (dtype) {
    case DType::kFloat32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = rng.Uniform();
      break;
    case DType::kFloat64:
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = rng.UniformDouble();
      break;
    case DType::kFloat16:
      for (int64_t i = 0; i < n; ++i) t.data<Float16>()[i] = Float16(rng.Uniform());
      break;
    case DType::kBFloat16:
      for (int64_t i = 0; i < n; ++i) t.data<BFloat16>()[i] = BFloat16(rng.Uniform());
      break;
    case DType::kInt64:
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(rng.Below(10));
      break;
    case DType::kInt32:
      for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>(rng.Below(10));
      break;
    case DType::kUInt8:
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(rng.Below(256));
      break;
    case DType::kInt8:
      for (int64_t i = 0; i < n; ++i) t.data<int8_t>()[i] = static_cast<int8_t>(rng.Below(256) - 128);
      break;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = (i % 2) == 0;
      break;
    default:
      return UnimplementedError("cannot make random ", DTypeName(dtype), " inputs; pass real data with strata run");
  }
  return t;
}

std::string SafeFileName(const std::string& name) {
  std::string out;
  for (char c : name) out += (isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "output";
  return out;
}

void AddSignatureAndProfileOptions(CLI::App* cmd, std::string* signature, std::string* profile) {
  cmd->add_option("--input_signature,--input-signature", *signature,
                  "Fix input shapes up front (tf.function's input_signature): NAME:[-1,28,28,1]:float32 (-1, ? or "
                  "None: any size; ';' between inputs), [None,28,28,1] for a single-input model, or JSON "
                  "{\"x\": {\"shape\": [null,28,28,1], \"dtype\": \"float32\"}}. Inputs that do not fit are refused "
                  "(INVALID_ARGUMENT) before a plan is compiled");
  cmd->add_option("--profile", *profile,
                  "Write a Chrome trace (Trace Event Format JSON; .gz: gzip) of one run: an event per node with its "
                  "op type, shapes and bytes, and memory counters. Open it in chrome://tracing or ui.perfetto.dev");
}

Status WriteProfile(const graph::Profiler& profiler, const std::string& path) {
  Status s = profiler.WriteChromeTrace(path);
  if (!s.ok()) return Status(s).WithContext(StrCat("--profile ", path));
  std::fprintf(stderr, "profile: wrote %zu trace events to %s (open in chrome://tracing or ui.perfetto.dev)\n",
               profiler.num_events(), path.c_str());
  return Status::OK();
}

}  // namespace strata::cli
