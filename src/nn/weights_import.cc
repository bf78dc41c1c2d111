// Weight import: strata checkpoints, safetensors, ONNX initializers, Keras HDF5 (through weights_h5.cc).
// Everything is checked before anything is assigned, so a failed load leaves the model as it was.
#include <algorithm>
#include <cstring>
#include <set>

#include "core/file_util.h"
#include "io/safetensors.h"
#include "strata/nn.h"
#include "strata/onnx.h"

namespace strata::nn {
namespace {

// At most this many names per kind of problem in one message; the rest are counted.
constexpr size_t kListMax = 12;

std::string ListNames(const std::vector<std::string>& items) {
  std::vector<std::string> shown(items.begin(), items.begin() + std::min(items.size(), kListMax));
  std::string out = StrJoin(shown, ", ");
  if (items.size() > kListMax) out += StrCat(" and ", items.size() - kListMax, " more");
  return out;
}

bool HasPrefix(const std::string& s, const std::vector<std::string>& prefixes) {
  for (const std::string& p : prefixes)
    if (!p.empty() && s.rfind(p, 0) == 0) return true;
  return false;
}

constexpr char kHdf5Magic[] = "\x89HDF\r\n\x1a\n";

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

StatusOr<std::map<std::string, Tensor>> ReadSafetensorsMap(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(io::Safetensors st, io::ReadSafetensors(path));
  std::map<std::string, Tensor> out;
  for (auto& [name, t] : st.tensors) out[name] = t;
  return out;
}

}  // namespace

Status AssignWeights(Model& model, const std::map<std::string, Tensor>& tensors, std::string_view where,
                     const LoadWeightsOptions& options) {
  if (!model.built()) return FailedPreconditionError("loading weights into model '", model.name(), "': not built");
  // File names -> model names.
  std::map<std::string, const Tensor*> by_model_name;
  std::map<std::string, std::string> file_name_of;
  std::vector<std::string> duplicates;
  for (const auto& [file_name, t] : tensors) {
    auto m = options.name_map.find(file_name);
    const std::string name = m == options.name_map.end() ? file_name : m->second;
    if (by_model_name.count(name)) {
      duplicates.push_back(StrCat("'", name, "' (from '", file_name_of[name], "' and '", file_name, "')"));
      continue;
    }
    by_model_name[name] = &t;
    file_name_of[name] = file_name;
  }
  std::vector<std::string> missing, mistyped, unexpected;
  std::map<std::string, Tensor> assign;
  size_t matched = 0, wanted = 0;
  std::set<std::string> known;
  for (const WeightSpec& w : model.weight_specs()) {
    known.insert(w.name);
    if (HasPrefix(w.name, options.skip_prefixes)) continue;
    ++wanted;
    auto it = by_model_name.find(w.name);
    if (it == by_model_name.end()) {
      missing.push_back(StrCat("'", w.name, "' ", DTypeName(w.dtype), w.shape.ToString()));
      continue;
    }
    const Tensor& t = *it->second;
    const std::string shown =
        file_name_of[w.name] == w.name ? StrCat("'", w.name, "'") : StrCat("'", w.name, "' (file: '", file_name_of[w.name], "')");
    if (t.dtype() != w.dtype || t.shape() != w.shape) {
      mistyped.push_back(StrCat(shown, ": the model has ", DTypeName(w.dtype), w.shape.ToString(),
                                ", the file ", t.TypeString()));
      continue;
    }
    ++matched;
    assign[w.name] = t;
  }
  if (!options.ignore_unexpected)
    for (const auto& [name, t] : by_model_name)
      if (!known.count(name))
        unexpected.push_back(file_name_of[name] == name ? StrCat("'", name, "' ", t->TypeString())
                                                        : StrCat("'", file_name_of[name], "' (as '", name, "') ",
                                                                 t->TypeString()));
  if (missing.empty() && mistyped.empty() && unexpected.empty() && duplicates.empty())
    return model.SetWeights(assign);
  std::vector<std::string> parts;
  if (!missing.empty()) parts.push_back(StrCat(missing.size(), " missing: ", ListNames(missing)));
  if (!mistyped.empty()) parts.push_back(StrCat(mistyped.size(), " of another shape or dtype: ", ListNames(mistyped)));
  if (!unexpected.empty())
    parts.push_back(StrCat(unexpected.size(), " unexpected (not in the model): ", ListNames(unexpected)));
  if (!duplicates.empty()) parts.push_back(StrCat("mapped twice: ", ListNames(duplicates)));
  std::string hint;
  if (matched * 2 < wanted)
    hint = StrCat(" Only ", matched, " of the model's ", wanted,
                  " weights match by name, shape and dtype: the file is likely for another architecture (or needs a "
                  "name map).");
  return InvalidArgumentError("weights ", where, " do not fit model '", model.name(), "' (", wanted,
                              " weights to load); nothing was loaded. ", StrJoin(parts, "; "), ".", hint);
}

StatusOr<WeightsFile> ReadWeightsFile(const std::string& path, const LoadWeightsOptions& options,
                                      const Model* model) {
  WeightsFile out;
  out.where = StrCat("'", path, "'");
  if (IsDirectory(path)) {
    const std::string st = JoinPath(path, "model.safetensors");
    if (!FileExists(st))
      return NotFoundError("weights ", out.where, " is a directory without model.safetensors (expected a strata "
                           "checkpoint directory, a .safetensors, .onnx or .h5 file)");
    STRATA_ASSIGN_OR_RETURN(out.tensors, ReadSafetensorsMap(st));
    out.where = StrCat("'", st, "'");
    return out;
  }
  if (!FileExists(path)) return NotFoundError("weights file ", out.where, " does not exist");
  // By contents: HDF5 has a signature, safetensors an 8-byte header length then '{', the rest is tried as ONNX.
  STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadRegularFile(path));
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kHdf5Magic, 8) == 0) {
    if (model == nullptr)
      return InvalidArgumentError("weights ", out.where, " is a Keras HDF5 file (.h5 / .weights.h5): reading it needs "
                                  "the model (its weights match by layer name and order)");
    if (!options.name_map.empty())
      return InvalidArgumentError("weights ", out.where, ": a name map applies to ONNX files, not Keras HDF5 files "
                                  "(which match by layer name)");
    STRATA_ASSIGN_OR_RETURN(out.tensors, ReadKerasWeightsFor(*model, path));
    return out;
  }
  if (EndsWith(path, ".h5") || EndsWith(path, ".hdf5"))
    return InvalidArgumentError("weights ", out.where, " is named like a Keras HDF5 file but does not start with the "
                                "HDF5 signature (truncated or not HDF5)");
  const bool safetensors_like = bytes.size() >= 9 && bytes[8] == '{';
  if (EndsWith(path, ".safetensors") || (safetensors_like && !EndsWith(path, ".onnx"))) {
    STRATA_ASSIGN_OR_RETURN(io::Safetensors st, io::ParseSafetensors(bytes, path));
    for (auto& [name, t] : st.tensors) out.tensors[name] = t;
    return out;
  }
  const size_t slash = path.rfind('/');
  const std::string base_dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  auto m = onnx::ParseModel(bytes, base_dir, path);
  if (!m.ok()) {
    if (EndsWith(path, ".onnx")) return m.status();
    return InvalidArgumentError("weights ", out.where, " is not a strata checkpoint, safetensors, ONNX or HDF5 file (",
                                m.status().message(), ")");
  }
  // Initializers: the float tensors; with a name map only the mapped ones. Other constants of the graph (shapes,
  // axes) are not weights, so initializers no weight asks for are not reported.
  std::vector<std::string> absent;
  for (const auto& [file_name, model_name] : options.name_map)
    if (!m->graph.initializers.count(file_name)) absent.push_back(StrCat("'", file_name, "'"));
  if (!absent.empty())
    return InvalidArgumentError("weights ", out.where, ": the name map names ", absent.size(),
                                " initializers the ONNX graph does not have: ", ListNames(absent));
  for (auto& [name, t] : m->graph.initializers) {
    if (!options.name_map.empty() && !options.name_map.count(name)) continue;
    if (t.dtype() != DType::kFloat32 && options.name_map.empty()) continue;
    out.tensors[name] = t;
  }
  out.extra_tensors_expected = options.name_map.empty();
  return out;
}

Status LoadWeights(Model& model, const std::string& path, const LoadWeightsOptions& options) {
  if (!model.built()) return FailedPreconditionError("loading weights into model '", model.name(), "': not built");
  STRATA_ASSIGN_OR_RETURN(WeightsFile file, ReadWeightsFile(path, options, &model));
  LoadWeightsOptions o = options;
  if (file.extra_tensors_expected) o.ignore_unexpected = true;
  return AssignWeights(model, file.tensors, file.where, o);
}

}  // namespace strata::nn
