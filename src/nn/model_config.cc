// Model::GetConfig and ModelFromConfig: a Functional model's architecture as JSON, Keras get_config/from_config style
// (docs/training.md "Model config"):
//
//   {"class_name": "Functional", "format_version": 1, "config": {
//     "name": "cnn_small",
//     "layers": [
//       {"class_name": "InputLayer", "name": "input_image",
//        "config": {"batch_shape": [null, 28, 28, 1], "dtype": "float32"}, "inbound_nodes": []},
//       {"class_name": "Conv2D", "name": "conv2d", "trainable": true, "dtype_policy": null,
//        "config": {"filters": 32, ...}, "inbound_nodes": [[["input_image", 0, 0]]]}, ...],
//     "input_layers": ["input_image"],
//     "output_layers": [{"name": "logits", "tensor": ["dense_1", 0, 0]}],
//     "losses": [{"tensor": ["reg", 0, 0], "weight": 0.01}]}}
//
// inbound_nodes lists a layer's calls in order (a shared layer has several); each call lists its inputs as
// [layer, call index, output index].
#include <map>
#include <unordered_map>

#include "nn/layer_config.h"
#include "nn/model_impl.h"

namespace strata::nn {

using internal::CallNode;

namespace {

constexpr int64_t kConfigFormat = 1;

Json TensorRef(const std::string& layer, int64_t call, int64_t index) {
  return Json::MakeArray({Json(layer), Json(call), Json(index)});
}

}  // namespace

StatusOr<std::string> Model::GetConfig() const {
  const Impl& m = *impl_;
  if (!m.built) return FailedPreconditionError("model '", m.name, "' is not built: call Build() before GetConfig()");
  // Each call node's (layer name, call index); model inputs are their InputLayer's call 0.
  std::unordered_map<const CallNode*, std::pair<std::string, int64_t>> ref;
  std::map<const Layer*, std::vector<const CallNode*>> calls;
  for (const auto& n : m.order) {
    if (!n->layer) {
      ref[n.get()] = {n->input_name, 0};
      continue;
    }
    auto& c = calls[n->layer.get()];
    ref[n.get()] = {n->layer->name(), static_cast<int64_t>(c.size())};
    c.push_back(n.get());
  }
  auto tensor_ref = [&](const KerasTensor& t) {
    const auto& [layer, call] = ref.at(t.node().get());
    return TensorRef(layer, call, t.index());
  };
  Json layers = Json::MakeArray();
  for (size_t i = 0; i < m.input_names.size(); ++i) {
    Json shape = Json::MakeArray();
    for (int64_t d : m.input_specs[i].shape) shape.Append(d < 0 ? Json() : Json(d));
    Json cfg = Json::MakeObject({{"batch_shape", shape}, {"dtype", DTypeName(m.input_specs[i].dtype)}});
    layers.Append(Json::MakeObject({{"class_name", "InputLayer"},
                                    {"name", m.input_names[i]},
                                    {"config", cfg},
                                    {"inbound_nodes", Json::MakeArray()}}));
  }
  for (const auto& layer : m.layers) {
    auto text = layer->GetConfig();
    if (!text.ok()) return text.status();
    auto cfg = Json::Parse(*text, StrCat("the config of layer '", layer->name(), "'"));
    if (!cfg.ok() || !cfg->is_object())
      return InternalError("layer '", layer->name(), "' (", layer->type(), "): GetConfig() returned no JSON object: ",
                           cfg.ok() ? text->substr(0, 80) : cfg.status().message());
    Json inbound = Json::MakeArray();
    for (const CallNode* call : calls[layer.get()]) {
      Json args = Json::MakeArray();
      for (const KerasTensor& t : call->inputs) args.Append(tensor_ref(t));
      inbound.Append(args);
    }
    const auto& policy = layer->dtype_policy();
    layers.Append(Json::MakeObject({{"class_name", layer->type()},
                                    {"name", layer->name()},
                                    {"trainable", layer->trainable()},
                                    {"dtype_policy", policy ? Json(DTypePolicyName(*policy)) : Json()},
                                    {"config", *cfg},
                                    {"inbound_nodes", inbound}}));
  }
  Json inputs = Json::MakeArray();
  for (const std::string& n : m.input_names) inputs.Append(n);
  Json outputs = Json::MakeArray();
  for (const ModelOutput& o : m.outputs)
    outputs.Append(Json::MakeObject({{"name", o.name}, {"tensor", tensor_ref(o.tensor)}}));
  Json losses = Json::MakeArray();
  for (const auto& [t, w] : m.aux) losses.Append(Json::MakeObject({{"tensor", tensor_ref(t)}, {"weight", w}}));
  Json config = Json::MakeObject(
      {{"name", m.name}, {"layers", layers}, {"input_layers", inputs}, {"output_layers", outputs}, {"losses", losses}});
  return Json::MakeObject({{"class_name", "Functional"}, {"format_version", kConfigFormat}, {"config", config}}).Dump();
}

namespace {

// One layer entry of the config while the model is rebuilt.
struct Entry {
  std::string where;  // "layers[3] ('dense_1')"
  std::string name;
  LayerRef layer;                                                                       // null for an InputLayer
  KerasTensor input;                                                                    // an InputLayer's tensor
  std::vector<std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>>> calls;  // inputs per call
  std::vector<std::vector<KerasTensor>> outputs;                                        // per call made so far
};

StatusOr<const Json*> Field(const Json& obj, std::string_view key, Json::Type type, const std::string& where) {
  const Json* v = obj.Find(key);
  if (v == nullptr) return InvalidArgumentError(where, ": '", key, "' is missing");
  const bool ok = v->type() == type || (type == Json::Type::kDouble && v->is_number());
  if (!ok)
    return InvalidArgumentError(where, ": '", key, "' expects ", JsonTypeName(type), ", got ", JsonTypeName(v->type()));
  return v;
}

// [layer, call, index] -> its parts.
StatusOr<std::pair<std::string, std::pair<int64_t, int64_t>>> ParseRef(const Json& j, const std::string& where) {
  if (!j.is_array() || j.size() != 3 || !j[0].is_string() || !j[1].is_int() || !j[2].is_int())
    return InvalidArgumentError(where, ": expects [layer name, call index, output index], got ", j.Dump());
  return std::make_pair(j[0].as_string(), std::make_pair(j[1].as_int(), j[2].as_int()));
}

StatusOr<Entry> ParseInputLayer(const Json& l, Entry e) {
  STRATA_ASSIGN_OR_RETURN(const Json* cfg, Field(l, "config", Json::Type::kObject, e.where));
  const std::string where = StrCat(e.where, " config");
  STRATA_ASSIGN_OR_RETURN(const Json* shape, Field(*cfg, "batch_shape", Json::Type::kArray, where));
  std::vector<int64_t> dims;
  for (size_t i = 0; i < shape->size(); ++i) {
    const Json& d = (*shape)[i];
    if (i == 0 && d.is_null()) continue;
    if (i == 0 || !d.is_int())
      return InvalidArgumentError(where, ": batch_shape expects [null, positive integers...], got ", shape->Dump());
    dims.push_back(d.as_int());
  }
  if (shape->size() == 0) return InvalidArgumentError(where, ": batch_shape is empty");
  DType dtype = DType::kFloat32;
  if (cfg->Find("dtype") != nullptr) {
    STRATA_ASSIGN_OR_RETURN(const Json* d, Field(*cfg, "dtype", Json::Type::kString, where));
    auto parsed = DTypeFromName(d->as_string());
    if (!parsed.ok()) return Status(parsed.status()).WithContext(where);
    dtype = *parsed;
  }
  e.input = Input(std::move(dims), e.name, dtype);
  e.outputs.push_back({e.input});
  return e;
}

StatusOr<Entry> ParseLayer(const Json& l, Entry e, const CustomObjects& custom) {
  STRATA_ASSIGN_OR_RETURN(const Json* cls, Field(l, "class_name", Json::Type::kString, e.where));
  STRATA_ASSIGN_OR_RETURN(const Json* cfg, Field(l, "config", Json::Type::kObject, e.where));
  const std::string& class_name = cls->as_string();
  if (class_name == "InputLayer") return ParseInputLayer(l, std::move(e));
  if (auto it = custom.find(class_name); it != custom.end()) {
    auto made = it->second(cfg->Dump(), e.name);
    if (!made.ok()) return Status(made.status()).WithContext(StrCat(e.where, " (custom class '", class_name, "')"));
    if (*made == nullptr) return InvalidArgumentError(e.where, ": the factory of '", class_name, "' returned null");
    (*made)->set_name(e.name);
    e.layer = LayerRef(std::move(*made));
  } else {
    auto made = internal::MakeBuiltinLayer(class_name, *cfg, e.name, e.where);
    if (!made.has_value())
      return InvalidArgumentError(e.where, ": unknown layer class '", class_name, "'; the built-in classes are ",
                                  StrJoin(BuiltinLayerClasses(), ", "),
                                  " (a custom layer needs a factory in custom_objects)");
    if (!made->ok()) return made->status();
    e.layer = std::move(**made);
  }
  if (const Json* t = l.Find("trainable"); t != nullptr) {
    if (!t->is_bool()) return InvalidArgumentError(e.where, ": 'trainable' expects true or false, got ", t->Dump());
    e.layer->set_trainable(t->as_bool());
  }
  if (const Json* p = l.Find("dtype_policy"); p != nullptr && !p->is_null()) {
    if (!p->is_string()) return InvalidArgumentError(e.where, ": 'dtype_policy' expects a string or null");
    STRATA_ASSIGN_OR_RETURN(DTypePolicy policy, ParseDTypePolicy(p->as_string(), StrCat(e.where, " dtype_policy")));
    e.layer->set_dtype_policy(policy);
  }
  STRATA_ASSIGN_OR_RETURN(const Json* inbound, Field(l, "inbound_nodes", Json::Type::kArray, e.where));
  for (size_t c = 0; c < inbound->size(); ++c) {
    const std::string where = StrCat(e.where, " inbound_nodes[", c, "]");
    if (!(*inbound)[c].is_array() || (*inbound)[c].size() == 0)
      return InvalidArgumentError(where, ": expects a non-empty array of [layer, call, output] inputs");
    auto& call = e.calls.emplace_back();
    for (size_t i = 0; i < (*inbound)[c].size(); ++i) {
      STRATA_ASSIGN_OR_RETURN(auto r, ParseRef((*inbound)[c][i], StrCat(where, "[", i, "]")));
      call.push_back(std::move(r));
    }
  }
  return e;
}

// Resolves [layer, call, output] against the calls made so far: nullopt while that call is not made yet.
StatusOr<std::optional<KerasTensor>> Resolve(const std::map<std::string, size_t>& by_name,
                                             const std::vector<Entry>& entries,
                                             const std::pair<std::string, std::pair<int64_t, int64_t>>& r,
                                             const std::string& where) {
  auto it = by_name.find(r.first);
  if (it == by_name.end())
    return InvalidArgumentError(where, ": refers to layer '", r.first, "', which the config does not have");
  const Entry& src = entries[it->second];
  const int64_t calls = src.layer.get() ? static_cast<int64_t>(src.calls.size()) : 1;
  if (r.second.first < 0 || r.second.first >= calls)
    return InvalidArgumentError(where, ": refers to call ", r.second.first, " of layer '", r.first, "', which has ",
                                calls, " call(s)");
  const int outs = src.layer.get() ? src.layer->num_outputs() : 1;
  if (r.second.second < 0 || r.second.second >= outs)
    return InvalidArgumentError(where, ": refers to output ", r.second.second, " of layer '", r.first, "', which has ",
                                outs, " output(s)");
  if (r.second.first >= static_cast<int64_t>(src.outputs.size())) return std::optional<KerasTensor>();
  return std::optional<KerasTensor>(src.outputs[r.second.first][r.second.second]);
}

// Makes every layer call once its inputs exist (a shared layer's calls in order), whatever the order of the layers.
Status MakeCalls(const std::map<std::string, size_t>& by_name, std::vector<Entry>& entries) {
  while (true) {
    bool progress = false, pending = false;
    for (Entry& e : entries) {
      while (e.layer.get() && e.outputs.size() < e.calls.size()) {
        const size_t c = e.outputs.size();
        std::vector<KerasTensor> inputs;
        for (size_t i = 0; i < e.calls[c].size(); ++i) {
          STRATA_ASSIGN_OR_RETURN(
              auto t, Resolve(by_name, entries, e.calls[c][i], StrCat(e.where, " inbound_nodes[", c, "][", i, "]")));
          if (!t.has_value()) break;
          inputs.push_back(*t);
        }
        if (inputs.size() < e.calls[c].size()) {
          pending = true;
          break;
        }
        e.outputs.push_back(e.layer.Call(inputs));
        progress = true;
      }
    }
    if (!pending) return Status::OK();
    if (!progress) {
      std::vector<std::string> stuck;
      for (const Entry& e : entries)
        if (e.layer.get() && e.outputs.size() < e.calls.size()) stuck.push_back(StrCat("'", e.name, "'"));
      return InvalidArgumentError("the calls of layers ", StrJoin(stuck, ", "),
                                  " wait on each other (a cycle in inbound_nodes)");
    }
  }
}

StatusOr<std::unique_ptr<Model>> FromConfig(const Json& root, const CustomObjects& custom, uint64_t seed) {
  if (!root.is_object()) return InvalidArgumentError("model config: expects a JSON object");
  STRATA_ASSIGN_OR_RETURN(const Json* cls, Field(root, "class_name", Json::Type::kString, "model config"));
  if (cls->as_string() != "Functional")
    return InvalidArgumentError("model config: class_name '", cls->as_string(),
                                "' is not supported (expected "
                                "'Functional')");
  if (const Json* v = root.Find("format_version"); v != nullptr && (!v->is_int() || v->as_int() > kConfigFormat))
    return InvalidArgumentError("model config: format_version ", v->Dump(), ", this build reads up to ", kConfigFormat);
  STRATA_ASSIGN_OR_RETURN(const Json* config, Field(root, "config", Json::Type::kObject, "model config"));
  STRATA_ASSIGN_OR_RETURN(const Json* name, Field(*config, "name", Json::Type::kString, "model config"));
  STRATA_ASSIGN_OR_RETURN(const Json* layers, Field(*config, "layers", Json::Type::kArray, "model config"));
  std::vector<Entry> entries;
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < layers->size(); ++i) {
    const Json& l = (*layers)[i];
    Entry e;
    e.where = StrCat("model config: layers[", i, "]");
    if (!l.is_object()) return InvalidArgumentError(e.where, ": expects an object");
    STRATA_ASSIGN_OR_RETURN(const Json* n, Field(l, "name", Json::Type::kString, e.where));
    e.name = n->as_string();
    e.where = StrCat(e.where, " ('", e.name, "')");
    if (e.name.empty()) return InvalidArgumentError(e.where, ": the name is empty");
    if (by_name.count(e.name)) return InvalidArgumentError(e.where, ": a second layer named '", e.name, "'");
    STRATA_ASSIGN_OR_RETURN(Entry parsed, ParseLayer(l, std::move(e), custom));
    by_name[parsed.name] = entries.size();
    entries.push_back(std::move(parsed));
  }
  STRATA_RETURN_IF_ERROR(MakeCalls(by_name, entries));
  auto tensor = [&](const Json& j, const std::string& where) -> StatusOr<KerasTensor> {
    STRATA_ASSIGN_OR_RETURN(auto r, ParseRef(j, where));
    STRATA_ASSIGN_OR_RETURN(auto t, Resolve(by_name, entries, r, where));
    if (!t.has_value()) return InternalError(where, ": unresolved");
    return *t;
  };
  std::vector<KerasTensor> inputs;
  STRATA_ASSIGN_OR_RETURN(const Json* in_names, Field(*config, "input_layers", Json::Type::kArray, "model config"));
  for (size_t i = 0; i < in_names->size(); ++i) {
    const std::string where = StrCat("model config: input_layers[", i, "]");
    const Json& n = (*in_names)[i];
    auto it = n.is_string() ? by_name.find(n.as_string()) : by_name.end();
    if (it == by_name.end() || entries[it->second].layer.get())
      return InvalidArgumentError(where, ": expects the name of an InputLayer of the config, got ", n.Dump());
    inputs.push_back(entries[it->second].input);
  }
  std::vector<ModelOutput> outputs;
  STRATA_ASSIGN_OR_RETURN(const Json* outs, Field(*config, "output_layers", Json::Type::kArray, "model config"));
  for (size_t i = 0; i < outs->size(); ++i) {
    const std::string where = StrCat("model config: output_layers[", i, "]");
    STRATA_ASSIGN_OR_RETURN(const Json* n, Field((*outs)[i], "name", Json::Type::kString, where));
    STRATA_ASSIGN_OR_RETURN(const Json* t, Field((*outs)[i], "tensor", Json::Type::kArray, where));
    STRATA_ASSIGN_OR_RETURN(KerasTensor kt, tensor(*t, StrCat(where, " tensor")));
    outputs.push_back({n->as_string(), kt});
  }
  auto model = std::make_unique<Model>(std::move(inputs), std::move(outputs), name->as_string());
  if (const Json* losses = config->Find("losses"); losses != nullptr && losses->is_array()) {
    for (size_t i = 0; i < losses->size(); ++i) {
      const std::string where = StrCat("model config: losses[", i, "]");
      STRATA_ASSIGN_OR_RETURN(const Json* t, Field((*losses)[i], "tensor", Json::Type::kArray, where));
      STRATA_ASSIGN_OR_RETURN(const Json* w, Field((*losses)[i], "weight", Json::Type::kDouble, where));
      STRATA_ASSIGN_OR_RETURN(KerasTensor kt, tensor(*t, StrCat(where, " tensor")));
      model->AddLoss(kt, w->as_double());
    }
  }
  if (Status s = model->Build(seed); !s.ok()) return s.WithContext("building the model of a model config");
  return model;
}

}  // namespace

StatusOr<std::unique_ptr<Model>> ModelFromConfig(std::string_view json, const CustomObjects& custom_objects,
                                                 uint64_t seed) {
  STRATA_ASSIGN_OR_RETURN(Json root, Json::Parse(json, "model config"));
  return FromConfig(root, custom_objects, seed);
}

}  // namespace strata::nn
