#include "tf/saved_model.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <set>
#include <unordered_map>

#include "core/file_util.h"
#include "tensorflow/core/framework/function.pb.h"
#include "tensorflow/core/protobuf/saved_model.pb.h"
#include "tf/graph_convert.h"
#include "tf/tensor_bundle.h"

namespace strata::tf {

namespace {

constexpr int kMaxCallDepth = 32;

bool IsVariableOp(const std::string& op) {
  return op == "VariableV2" || op == "Variable" || op == "VarHandleOp";
}

}  // namespace

// ---- frames and references ----

Frame* Importer::NewFrame(Frame* parent, const tensorflow::FunctionDef* fn, const std::string& prefix) {
  frames_.push_back(std::make_unique<Frame>());
  Frame* f = frames_.back().get();
  f->parent = parent;
  f->fn = fn;
  f->prefix = prefix;
  f->depth = parent ? parent->depth + 1 : 0;
  if (fn) {
    for (const auto& n : fn->node_def()) f->nodes.emplace(n.name(), &n);
  } else {
    for (const auto& n : graph_->node()) f->nodes.emplace(n.name(), &n);
  }
  return f;
}

StatusOr<Frame*> Importer::CallFrame(Frame* caller, const tensorflow::NodeDef& call) {
  auto key = std::make_pair(caller, &call);
  auto it = call_frames_.find(key);
  if (it != call_frames_.end()) return it->second;
  if (caller->depth >= kMaxCallDepth)
    return InvalidArgumentError(Describe(caller, call), ": function calls nest deeper than ", kMaxCallDepth);
  const auto f_attr = call.attr().find("f");
  if (f_attr == call.attr().end() || f_attr->second.func().name().empty())
    return InvalidArgumentError(Describe(caller, call), ": has no function attribute 'f'");
  const std::string& fname = f_attr->second.func().name();
  auto fit = functions_.find(fname);
  if (fit == functions_.end())
    return InvalidArgumentError(Describe(caller, call), ": calls function '", fname,
                                "', which the graph's function library does not define");
  const tensorflow::FunctionDef* fn = fit->second;
  std::vector<std::string> data_inputs;
  for (const auto& in : call.input())
    if (in.empty() || in[0] != '^') data_inputs.push_back(in);
  if (static_cast<int>(data_inputs.size()) != fn->signature().input_arg_size())
    return InvalidArgumentError(Describe(caller, call), ": passes ", data_inputs.size(), " inputs to function '",
                                fname, "', which takes ", fn->signature().input_arg_size());
  Frame* f = NewFrame(caller, fn, caller->prefix + call.name() + "/");
  for (int i = 0; i < fn->signature().input_arg_size(); ++i)
    f->args.emplace(fn->signature().input_arg(i).name(), data_inputs[i]);
  call_frames_.emplace(key, f);
  return f;
}

std::string Importer::Describe(const Frame* f, const tensorflow::NodeDef& n) {
  std::string where = f->fn ? StrCat(" in function '", f->fn->signature().name(), "'") : std::string();
  return StrCat("node '", n.name(), "' (", n.op(), ")", where);
}

namespace {

bool ParseIndex(std::string_view s, int* out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

int64_t IntAttr(const tensorflow::NodeDef& n, const std::string& name, int64_t def) {
  auto it = n.attr().find(name);
  return it == n.attr().end() ? def : it->second.i();
}

}  // namespace

// The flat output index of `arg`:`idx` of node `n` (function-body references name output args).
StatusOr<int> Importer::OutputIndex(const Frame* f, const tensorflow::NodeDef& n, const std::string& arg, int idx) {
  const std::string& op = n.op();
  if (op == "FusedBatchNorm" || op == "FusedBatchNormV2" || op == "FusedBatchNormV3") {
    static const char* kArgs[] = {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
                                  "reserve_space_3"};
    for (int i = 0; i < 6; ++i)
      if (arg == kArgs[i]) return i + idx;
  } else if (op == "ParseExample" || op == "ParseExampleV2") {
    const int64_t ns = op == "ParseExample" ? IntAttr(n, "Nsparse", 0) : IntAttr(n, "num_sparse", 0);
    if (arg == "sparse_indices") return idx;
    if (arg == "sparse_values") return static_cast<int>(ns) + idx;
    if (arg == "sparse_shapes") return static_cast<int>(2 * ns) + idx;
    if (arg == "dense_values") return static_cast<int>(3 * ns) + idx;
    return UnimplementedError(Describe(f, n), ": output '", arg, "' (ragged features) is not supported");
  } else if (op == "Unique" || op == "TopKV2") {
    return arg == "y" || arg == "values" ? idx : 1 + idx;
  }
  return idx;  // single-output ops and ops with one list output (IdentityN, Split, Unpack, calls, RestoreV2)
}

StatusOr<TfRef> Importer::Lookup(Frame* f, const std::string& ref) {
  if (!ref.empty() && ref[0] == '^') return InvalidArgumentError("control input '", ref, "' used as data");
  if (f->fn) {
    const size_t c1 = ref.find(':');
    if (c1 == std::string::npos) {
      auto a = f->args.find(ref);
      if (a == f->args.end())
        return InvalidArgumentError("function '", f->fn->signature().name(), "' refers to '", ref,
                                    "', which is neither an argument nor a node output");
      return Lookup(f->parent, a->second);
    }
    const size_t c2 = ref.find(':', c1 + 1);
    const std::string node = ref.substr(0, c1);
    const std::string arg = c2 == std::string::npos ? ref.substr(c1 + 1) : ref.substr(c1 + 1, c2 - c1 - 1);
    int idx = 0;
    if (c2 != std::string::npos && !ParseIndex(std::string_view(ref).substr(c2 + 1), &idx))
      return InvalidArgumentError("function '", f->fn->signature().name(), "': malformed tensor reference '", ref,
                                  "'");
    auto it = f->nodes.find(node);
    if (it == f->nodes.end())
      return InvalidArgumentError("function '", f->fn->signature().name(), "' refers to node '", node,
                                  "', which it does not define");
    STRATA_ASSIGN_OR_RETURN(int flat, OutputIndex(f, *it->second, arg, idx));
    return TfRef{f, it->second, flat};
  }
  std::string node = ref;
  int idx = 0;
  const size_t c = ref.rfind(':');
  if (c != std::string::npos) {
    if (!ParseIndex(std::string_view(ref).substr(c + 1), &idx))
      return InvalidArgumentError("malformed tensor name '", ref, "' (expected node:index)");
    node = ref.substr(0, c);
  }
  auto it = f->nodes.find(node);
  if (it == f->nodes.end()) return NotFoundError("the graph has no node '", node, "' (tensor '", ref, "')");
  return TfRef{f, it->second, idx};
}

StatusOr<TfRef> Importer::TraceIdentity(TfRef r) {
  for (int guard = 0; guard < 1000; ++guard) {
    const std::string& op = r.node->op();
    if (op == "Identity" || op == "Snapshot" || op == "StopGradient") {
      if (r.node->input_size() < 1) return r;
      STRATA_ASSIGN_OR_RETURN(r, Lookup(r.frame, r.node->input(0)));
    } else if (op == "IdentityN") {
      if (r.index >= r.node->input_size()) return r;
      STRATA_ASSIGN_OR_RETURN(r, Lookup(r.frame, r.node->input(r.index)));
    } else if (op == "StatefulPartitionedCall" || op == "PartitionedCall") {
      // Through a call into the function's return value.
      STRATA_ASSIGN_OR_RETURN(Frame * child, CallFrame(r.frame, *r.node));
      const auto& outs = child->fn->signature().output_arg();
      if (r.index >= outs.size()) return r;
      auto ret = child->fn->ret().find(outs[r.index].name());
      if (ret == child->fn->ret().end()) return r;
      STRATA_ASSIGN_OR_RETURN(r, Lookup(child, ret->second));
    } else {
      return r;
    }
  }
  return InvalidArgumentError("a cycle of Identity nodes");
}

StatusOr<Tensor> Importer::ConstValue(const TfRef& r) {
  if (r.node->op() != "Const")
    return InvalidArgumentError(Describe(r.frame, *r.node), ": expected a Const");
  auto it = r.node->attr().find("value");
  if (it == r.node->attr().end() || !it->second.has_tensor())
    return InvalidArgumentError(Describe(r.frame, *r.node), ": Const without a tensor 'value'");
  return TensorFromTf(it->second.tensor(), Describe(r.frame, *r.node));
}

// Follows the restore graph: RestoreV2 outputs assigned to variables (directly, through Identity, or inside the
// restore function a top-level call runs).
Status Importer::ScanRestores(Frame* f) {
  for (const auto& [name, np] : f->nodes) {
    const auto& n = *np;
    if ((n.op() == "Assign" || n.op() == "AssignVariableOp") && n.input_size() >= 2) {
      auto target = Lookup(f, n.input(0));
      auto src = Lookup(f, n.input(1));
      if (!target.ok() || !src.ok()) continue;
      auto t = TraceIdentity(*target);
      auto s = TraceIdentity(*src);
      if (!t.ok() || !s.ok()) continue;
      if (!IsVariableOp(t->node->op()) || t->frame->fn) continue;
      if (s->node->op() != "RestoreV2" && s->node->op() != "Restore") continue;
      if (s->node->op() == "Restore") {
        auto names_ref = Lookup(s->frame, s->node->input(1));
        if (!names_ref.ok()) continue;
        auto tr = TraceIdentity(*names_ref);
        if (!tr.ok()) continue;
        auto names = ConstValue(*tr);
        if (!names.ok() || names->dtype() != DType::kString || names->num_elements() < 1) continue;
        var_keys_[t->node->name()] = names->data<std::string>()[0];
        continue;
      }
      if (s->node->input_size() < 2) continue;
      auto names_ref = Lookup(s->frame, s->node->input(1));
      if (!names_ref.ok()) continue;
      auto tr = TraceIdentity(*names_ref);
      if (!tr.ok()) continue;
      auto names = ConstValue(*tr);
      if (!names.ok() || names->dtype() != DType::kString || s->index >= names->num_elements()) continue;
      var_keys_[t->node->name()] = names->data<std::string>()[s->index];
    } else if ((n.op() == "StatefulPartitionedCall" || n.op() == "PartitionedCall") && f->depth < 4) {
      auto child = CallFrame(f, n);
      if (child.ok()) STRATA_RETURN_IF_ERROR(ScanRestores(*child));
    }
  }
  return Status::OK();
}

StatusOr<Tensor> Importer::VariableValue(const tensorflow::NodeDef& var) {
  auto cached = var_values_.find(var.name());
  if (cached != var_values_.end()) return cached->second;
  auto key = var_keys_.find(var.name());
  std::string k;
  if (key != var_keys_.end()) {
    k = key->second;
  } else if (bundle_ && bundle_->Find(var.name())) {
    k = var.name();  // TF1 savers key variables by their names
  } else {
    return NotFoundError("variable '", var.name(), "' (", var.op(), ") has no value: no RestoreV2 in the "
                         "SavedModel's restore graph assigns it and ", dir_, "/variables has no tensor of that name");
  }
  if (!bundle_)
    return NotFoundError("variable '", var.name(), "' needs tensor '", k, "' but ", dir_, "/variables/ is missing");
  auto t = bundle_->Read(k);
  if (!t.ok()) return Status(t.status().code(), StrCat("variable '", var.name(), "': ", t.status().message()));
  var_values_.emplace(var.name(), *t);
  return *t;
}

// ---- loading ----

const ImportedSignature* SavedModelImport::Find(const std::string& key) const {
  for (const auto& s : signatures)
    if (s.key == key) return &s;
  return nullptr;
}

const ImportedSignature* SavedModelImport::Default() const {
  if (const auto* s = Find("serving_default")) return s;
  for (const auto& s : signatures)
    if (s.method_name == "tensorflow/serving/predict") return &s;
  return signatures.empty() ? nullptr : &signatures[0];
}

bool IsSavedModelDir(const std::string& dir) { return FileExists(JoinPath(dir, "saved_model.pb")); }

StatusOr<SavedModelImport> LoadSavedModel(const std::string& dir) {
  const std::string pb_path = JoinPath(dir, "saved_model.pb");
  if (!FileExists(pb_path)) {
    if (FileExists(JoinPath(dir, "saved_model.pbtxt")))
      return UnimplementedError(dir, " holds saved_model.pbtxt; strata reads the binary saved_model.pb only");
    return NotFoundError("no SavedModel in ", dir, ": expected ", pb_path);
  }
  STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadRegularFile(pb_path, int64_t{2} << 30));
  auto sm = std::make_shared<tensorflow::SavedModel>();
  if (!sm->ParseFromString(bytes)) return DataLossError(pb_path, ": not a SavedModel protocol buffer");
  const tensorflow::MetaGraphDef* mg = nullptr;
  std::vector<std::string> all_tags;
  for (const auto& m : sm->meta_graphs()) {
    std::vector<std::string> tags(m.meta_info_def().tags().begin(), m.meta_info_def().tags().end());
    all_tags.push_back(StrCat("{", StrJoin(tags, ","), "}"));
    if (!mg && std::find(tags.begin(), tags.end(), "serve") != tags.end()) mg = &m;
  }
  if (!mg)
    return NotFoundError(pb_path, " has no MetaGraph tagged 'serve' (it has ", all_tags.empty() ? "none" : "",
                         StrJoin(all_tags, ", "), ")");
  SavedModelImport out;
  out.dir = dir;
  out.tags.assign(mg->meta_info_def().tags().begin(), mg->meta_info_def().tags().end());

  auto lib = std::make_shared<tensorflow::FunctionDefLibrary>();
  if (!lib->ParseFromString(mg->graph_def().library()))
    return DataLossError(pb_path, ": the graph's function library does not parse");

  std::unique_ptr<TensorBundle> bundle;
  const std::string prefix = JoinPath(JoinPath(dir, "variables"), "variables");
  if (FileExists(prefix + ".index")) {
    auto b = TensorBundle::Open(prefix);
    if (!b.ok()) return Status(b.status().code(), StrCat("SavedModel ", dir, ": ", b.status().message()));
    bundle = std::make_unique<TensorBundle>(std::move(b).value());
  }

  Importer imp(dir, &mg->graph_def(), lib.get(), bundle.get());
  STRATA_RETURN_IF_ERROR(imp.Init());
  if (mg->signature_def().empty()) return NotFoundError(pb_path, ": the 'serve' MetaGraph has no SignatureDefs");
  std::vector<std::string> keys;
  for (const auto& [k, v] : mg->signature_def())
    if (k != "__saved_model_init_op") keys.push_back(k);  // TF's init-op entry, not a signature to serve
  std::sort(keys.begin(), keys.end());
  for (const auto& k : keys) {
    auto sig = imp.ImportSignature(k, mg->signature_def().at(k));
    if (!sig.ok())
      return Status(sig.status().code(), StrCat("SavedModel ", dir, " signature '", k, "': ", sig.status().message()));
    out.signatures.push_back(std::move(sig).value());
  }
  return out;
}

Importer::Importer(std::string dir, const tensorflow::GraphDef* graph, const tensorflow::FunctionDefLibrary* lib,
                   const TensorBundle* bundle)
    : dir_(std::move(dir)), graph_(graph), lib_(lib), bundle_(bundle) {}

Importer::~Importer() = default;

Status Importer::Init() {
  for (const auto& fn : lib_->function()) functions_.emplace(fn.signature().name(), &fn);
  top_ = NewFrame(nullptr, nullptr, "");
  return ScanRestores(top_);
}

}  // namespace strata::tf
