// GraphDef -> strata IR (ONNX semantics, opset 17) for one SignatureDef. TF's NHWC convolutions and pools become
// NCHW ONNX ops between two Transposes; constant weights are rearranged at import time.
#include "tf/graph_convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "tf/layout.h"
#include "tf/tensor_bundle.h"

namespace strata::tf {

namespace {

constexpr int kOpset = 17;
constexpr char kExamplesMarker[] = "\x01serialized-examples:";

using tensorflow::NodeDef;

int OnnxTypeOf(DType t) {
  switch (t) {
    case DType::kFloat32: return 1;
    case DType::kUInt8: return 2;
    case DType::kInt8: return 3;
    case DType::kUInt16: return 4;
    case DType::kInt16: return 5;
    case DType::kInt32: return 6;
    case DType::kInt64: return 7;
    case DType::kString: return 8;
    case DType::kBool: return 9;
    case DType::kFloat16: return 10;
    case DType::kFloat64: return 11;
    case DType::kUInt32: return 12;
    case DType::kUInt64: return 13;
    case DType::kBFloat16: return 16;
    default: return 0;
  }
}

PartialShape ShapeFromTf(const tensorflow::TensorShapeProto& s) {
  PartialShape p;
  if (s.unknown_rank()) return p;
  p.rank_known = true;
  for (const auto& d : s.dim()) {
    Dim dim;
    if (d.size() >= 0) dim.value = d.size();
    p.dims.push_back(dim);
  }
  return p;
}

// Values of an integer constant as int64.
StatusOr<std::vector<int64_t>> IntValues(const Tensor& t, const std::string& what) {
  std::vector<int64_t> v;
  if (t.dtype() == DType::kInt32) {
    for (int32_t x : t.values<int32_t>()) v.push_back(x);
  } else if (t.dtype() == DType::kInt64) {
    for (int64_t x : t.values<int64_t>()) v.push_back(x);
  } else {
    return InvalidArgumentError(what, " must be an int32 or int64 constant, got ", t.TypeString());
  }
  return v;
}

}  // namespace

StatusOr<Tensor> TensorFromTf(const tensorflow::TensorProto& p, const std::string& where) {
  const DType dt = DTypeOfTf(p.dtype());
  if (dt == DType::kUndefined) return UnimplementedError(where, ": constant of TF dtype ", p.dtype(), " is not supported");
  Shape shape;
  for (const auto& d : p.tensor_shape().dim()) {
    if (d.size() < 0) return InvalidArgumentError(where, ": constant with a negative dimension");
    shape.PushBack(d.size());
  }
  const int64_t n = shape.NumElements();
  if (n > (int64_t{1} << 34)) return InvalidArgumentError(where, ": constant of ", n, " elements is too large");
  STRATA_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dt, shape));
  if (dt == DType::kString) {
    const int m = p.string_val_size();
    if (m == 0 && n > 0) return InvalidArgumentError(where, ": string constant without values");
    for (int64_t i = 0; i < n; ++i) t.data<std::string>()[i] = p.string_val(static_cast<int>(std::min<int64_t>(i, m - 1)));
    return t;
  }
  const size_t bytes = t.byte_size();
  if (!p.tensor_content().empty()) {
    if (p.tensor_content().size() != bytes)
      return InvalidArgumentError(where, ": constant ", t.TypeString(), " needs ", bytes, " bytes of content, has ",
                                  p.tensor_content().size());
    std::memcpy(t.raw_data(), p.tensor_content().data(), bytes);
    return t;
  }
  // Typed lists: fewer values than elements repeat the last one (none: zeros).
  auto fill = [&](auto* out, const auto& vals) -> Status {
    const int64_t m = vals.size();
    if (m > n) return InvalidArgumentError(where, ": constant has ", m, " values for ", n, " elements");
    using T = std::remove_pointer_t<decltype(out)>;
    for (int64_t i = 0; i < n; ++i) out[i] = m == 0 ? T{} : static_cast<T>(vals.Get(static_cast<int>(std::min(i, m - 1))));
    return Status::OK();
  };
  switch (dt) {
    case DType::kFloat32: STRATA_RETURN_IF_ERROR(fill(t.data<float>(), p.float_val())); break;
    case DType::kFloat64: STRATA_RETURN_IF_ERROR(fill(t.data<double>(), p.double_val())); break;
    case DType::kInt32: STRATA_RETURN_IF_ERROR(fill(t.data<int32_t>(), p.int_val())); break;
    case DType::kInt16: STRATA_RETURN_IF_ERROR(fill(t.data<int16_t>(), p.int_val())); break;
    case DType::kInt8: STRATA_RETURN_IF_ERROR(fill(t.data<int8_t>(), p.int_val())); break;
    case DType::kUInt8: STRATA_RETURN_IF_ERROR(fill(t.data<uint8_t>(), p.int_val())); break;
    case DType::kUInt16: STRATA_RETURN_IF_ERROR(fill(t.data<uint16_t>(), p.int_val())); break;
    case DType::kInt64: STRATA_RETURN_IF_ERROR(fill(t.data<int64_t>(), p.int64_val())); break;
    case DType::kBool: STRATA_RETURN_IF_ERROR(fill(t.data<bool>(), p.bool_val())); break;
    case DType::kUInt32: STRATA_RETURN_IF_ERROR(fill(t.data<uint32_t>(), p.uint32_val())); break;
    case DType::kUInt64: STRATA_RETURN_IF_ERROR(fill(t.data<uint64_t>(), p.uint64_val())); break;
    case DType::kFloat16:
    case DType::kBFloat16: {
      std::vector<uint16_t> bits(static_cast<size_t>(n));
      STRATA_RETURN_IF_ERROR(fill(bits.data(), p.half_val()));
      std::memcpy(t.raw_data(), bits.data(), bytes);
      break;
    }
    default:
      return UnimplementedError(where, ": constant of dtype ", DTypeName(dt), " is not supported");
  }
  return t;
}

namespace {

// Converts the part of the graph one signature needs.
class SigConverter {
 public:
  SigConverter(Importer* imp, graph::Graph* g, ImportedSignature* sig) : imp_(imp), g_(g), sig_(sig) {}

  void AddFeed(const std::string& tensor, const std::string& ir_name) { feeds_[Canonical(tensor)] = ir_name; }
  bool IsExamplesInput(const std::string& tensor) const {
    auto it = feeds_.find(Canonical(tensor));
    return it != feeds_.end() && it->second.rfind(kExamplesMarker, 0) == 0;
  }
  StatusOr<std::string> ValueOf(const TfRef& r);
  const std::set<std::string>& raw_string_inputs() const { return raw_string_inputs_; }

 private:
  struct Ctx {
    TfRef r;
    const NodeDef& n;
    std::string base;  // IR name prefix for this node
  };
  static std::string Canonical(const std::string& t) { return t.find(':') == std::string::npos ? t + ":0" : t; }

  StatusOr<std::vector<std::string>> Convert(const TfRef& r);
  StatusOr<std::vector<std::string>> ConvertOp(Ctx& c);

  // Data inputs (control inputs skipped).
  int NumInputs(const Ctx& c) const {
    int k = 0;
    for (const auto& in : c.n.input()) k += (in.empty() || in[0] != '^') ? 1 : 0;
    return k;
  }
  StatusOr<TfRef> InRef(const Ctx& c, int i) {
    int k = 0;
    for (const auto& in : c.n.input()) {
      if (!in.empty() && in[0] == '^') continue;
      if (k++ == i) return imp_->Lookup(c.r.frame, in);
    }
    return InvalidArgumentError(Importer::Describe(c.r.frame, c.n), ": has no input ", i);
  }
  StatusOr<std::string> In(const Ctx& c, int i, bool examples_ok = false) {
    STRATA_ASSIGN_OR_RETURN(TfRef r, InRef(c, i));
    STRATA_ASSIGN_OR_RETURN(std::string v, ValueOf(r));
    if (!examples_ok && v.rfind(kExamplesMarker, 0) == 0) {
      // A string input used as strings (not parsed as tf.Examples): a real graph input.
      const std::string name = v.substr(sizeof(kExamplesMarker) - 1);
      raw_string_inputs_.insert(name);
      return name;
    }
    return v;
  }
  StatusOr<Tensor> ConstIn(const Ctx& c, int i) {
    STRATA_ASSIGN_OR_RETURN(std::string v, In(c, i));
    auto it = consts_.find(v);
    if (it == consts_.end())
      return UnimplementedError(Importer::Describe(c.r.frame, c.n), ": input ", i,
                                " must be a constant (computed values there are not supported)");
    return it->second;
  }
  StatusOr<std::vector<int64_t>> ConstInts(const Ctx& c, int i) {
    STRATA_ASSIGN_OR_RETURN(Tensor t, ConstIn(c, i));
    return IntValues(t, StrCat(Importer::Describe(c.r.frame, c.n), " input ", i));
  }
  std::string NewName(const Ctx& c) { return StrCat(c.base, "/_", counter_++); }
  std::string AddConst(const std::string& name, Tensor t) {
    g_->initializers[name] = t;
    consts_[name] = std::move(t);
    return name;
  }
  std::string ConstInt64s(const Ctx& c, const std::vector<int64_t>& v) {
    return AddConst(NewName(c), Tensor::FromVector<int64_t>(v));
  }
  // Adds an ONNX node; `main` names its outputs "<base>:k" (the TF tensor names), otherwise fresh names.
  std::vector<std::string> Emit(const Ctx& c, const std::string& op, std::vector<std::string> inputs, int n_out,
                                graph::AttributeMap attrs = {}, bool main = false) {
    graph::Node node;
    node.name = main ? c.base : NewName(c);
    node.op_type = op;
    node.opset = kOpset;
    node.inputs = std::move(inputs);
    node.attrs = std::move(attrs);
    for (int k = 0; k < n_out; ++k) node.outputs.push_back(main ? StrCat(c.base, ":", k) : StrCat(node.name, ":", k));
    std::vector<std::string> outs = node.outputs;
    g_->nodes.push_back(std::move(node));
    return outs;
  }
  std::string Emit1(const Ctx& c, const std::string& op, std::vector<std::string> inputs,
                    graph::AttributeMap attrs = {}, bool main = false) {
    return Emit(c, op, std::move(inputs), 1, std::move(attrs), main)[0];
  }
  Status Unsupported(const Ctx& c, const std::string& why) {
    return UnimplementedError(Importer::Describe(c.r.frame, c.n), ": ", why);
  }

  // Attribute access with TF's defaults (SavedModels strip attributes that have their default value).
  const tensorflow::AttrValue* Attr(const Ctx& c, const std::string& name) {
    auto it = c.n.attr().find(name);
    return it == c.n.attr().end() ? nullptr : &it->second;
  }
  int64_t AttrI(const Ctx& c, const std::string& name, int64_t def) {
    auto* a = Attr(c, name);
    return a ? a->i() : def;
  }
  float AttrF(const Ctx& c, const std::string& name, float def) {
    auto* a = Attr(c, name);
    return a ? a->f() : def;
  }
  bool AttrB(const Ctx& c, const std::string& name, bool def) {
    auto* a = Attr(c, name);
    return a ? a->b() : def;
  }
  std::string AttrS(const Ctx& c, const std::string& name, const std::string& def) {
    auto* a = Attr(c, name);
    return a ? a->s() : def;
  }
  std::vector<int64_t> AttrInts(const Ctx& c, const std::string& name, std::vector<int64_t> def) {
    auto* a = Attr(c, name);
    if (!a) return def;
    return std::vector<int64_t>(a->list().i().begin(), a->list().i().end());
  }

  StatusOr<std::vector<std::string>> ConvertParseExample(Ctx& c);
  StatusOr<std::vector<std::string>> ConvertConv(Ctx& c, bool depthwise);
  StatusOr<std::vector<std::string>> ConvertPool(Ctx& c, const std::string& onnx_op);
  StatusOr<std::vector<std::string>> ConvertBatchNorm(Ctx& c);
  StatusOr<std::vector<std::string>> ConvertStridedSlice(Ctx& c);
  StatusOr<std::vector<std::string>> ConvertResize(Ctx& c);
  StatusOr<std::vector<std::string>> ConvertReduce(Ctx& c, const std::string& onnx_op);
  Status Spatial(Ctx& c, graph::AttributeMap* attrs);

  Importer* imp_;
  graph::Graph* g_;
  ImportedSignature* sig_;
  std::map<std::string, std::string> feeds_;  // top-level tensor name -> IR value (or the examples marker)
  std::map<std::pair<Frame*, const NodeDef*>, std::vector<std::string>> memo_;
  std::set<std::pair<Frame*, const NodeDef*>> active_;
  std::map<std::string, Tensor> consts_;  // IR value -> its constant value
  std::map<std::string, std::string> var_inits_;  // variable node -> initializer name
  std::set<std::string> raw_string_inputs_;
  std::map<std::string, SignatureTensor> pending_features_;  // parsed feature (IR name = key) -> its model input
  int counter_ = 0;
};

StatusOr<std::string> SigConverter::ValueOf(const TfRef& r0) {
  TfRef r = r0;
  for (int guard = 0; guard < 10000; ++guard) {
    if (r.frame == imp_->top()) {
      auto f = feeds_.find(StrCat(r.node->name(), ":", r.index));
      if (f != feeds_.end()) return f->second;
    }
    const std::string& op = r.node->op();
    if (op == "StatefulPartitionedCall" || op == "PartitionedCall") {
      STRATA_ASSIGN_OR_RETURN(Frame * child, imp_->CallFrame(r.frame, *r.node));
      const auto& outs = child->fn->signature().output_arg();
      if (r.index >= outs.size())
        return InvalidArgumentError(Importer::Describe(r.frame, *r.node), ": output ", r.index, " of ", outs.size());
      auto ret = child->fn->ret().find(outs[r.index].name());
      if (ret == child->fn->ret().end())
        return InvalidArgumentError("function '", child->fn->signature().name(), "' does not return '",
                                    outs[r.index].name(), "'");
      STRATA_ASSIGN_OR_RETURN(r, imp_->Lookup(child, ret->second));
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> outs, Convert(r));
    if (r.index >= static_cast<int>(outs.size()) || outs[r.index].empty())
      return UnimplementedError(Importer::Describe(r.frame, *r.node), ": output ", r.index,
                                " is not supported by strata's importer");
    // A parsed tf.Example feature becomes a model input only when the signature uses it.
    auto pf = pending_features_.find(outs[r.index]);
    if (pf != pending_features_.end()) {
      const bool known = std::any_of(sig_->features.begin(), sig_->features.end(),
                                     [&](const SignatureTensor& t) { return t.alias == pf->second.alias; });
      if (!known) sig_->features.push_back(pf->second);
    }
    return outs[r.index];
  }
  return InvalidArgumentError("function calls nest too deeply");
}

StatusOr<std::vector<std::string>> SigConverter::Convert(const TfRef& r) {
  auto key = std::make_pair(r.frame, r.node);
  auto m = memo_.find(key);
  if (m != memo_.end()) return m->second;
  if (!active_.insert(key).second)
    return InvalidArgumentError(Importer::Describe(r.frame, *r.node), ": is part of a cycle (control flow loops are "
                                "not supported)");
  Ctx c{r, *r.node, r.frame->prefix + r.node->name()};
  auto outs = ConvertOp(c);
  active_.erase(key);
  if (!outs.ok()) return outs.status();
  memo_.emplace(key, *outs);
  return outs;
}

StatusOr<std::vector<std::string>> SigConverter::ConvertOp(Ctx& c) {
  const std::string& op = c.n.op();
  using A = graph::Attribute;
  // Pass-through ops.
  if (op == "Identity" || op == "Snapshot" || op == "StopGradient" || op == "PreventGradient" ||
      op == "EnsureShape" || op == "CheckNumerics" || op == "PlaceholderWithDefault") {
    STRATA_ASSIGN_OR_RETURN(std::string v, In(c, 0, true));
    return std::vector<std::string>{v};
  }
  if (op == "IdentityN") {
    std::vector<std::string> outs;
    for (int i = 0; i < NumInputs(c); ++i) {
      STRATA_ASSIGN_OR_RETURN(std::string v, In(c, i, true));
      outs.push_back(v);
    }
    return outs;
  }
  if (op == "Const") {
    auto* a = Attr(c, "value");
    if (!a || !a->has_tensor()) return Unsupported(c, "Const without a 'value' tensor");
    STRATA_ASSIGN_OR_RETURN(Tensor t, TensorFromTf(a->tensor(), Importer::Describe(c.r.frame, c.n)));
    return std::vector<std::string>{AddConst(c.base + ":0", std::move(t))};
  }
  if (op == "Placeholder")
    return InvalidArgumentError(Importer::Describe(c.r.frame, c.n),
                                ": the signature's outputs depend on this placeholder, which is not one of its inputs");
  if (op == "VariableV2" || op == "Variable" || op == "ReadVariableOp") {
    const NodeDef* var = &c.n;
    if (op == "ReadVariableOp") {
      STRATA_ASSIGN_OR_RETURN(TfRef h, InRef(c, 0));
      STRATA_ASSIGN_OR_RETURN(h, imp_->TraceIdentity(h));
      if (h.node->op() != "VarHandleOp" || h.frame != imp_->top())
        return Unsupported(c, StrCat("reads a resource from ", Importer::Describe(h.frame, *h.node),
                                     "; only VarHandleOp variables of the top-level graph are supported"));
      var = h.node;
    }
    auto it = var_inits_.find(var->name());
    if (it != var_inits_.end()) return std::vector<std::string>{it->second};
    STRATA_ASSIGN_OR_RETURN(Tensor t, imp_->VariableValue(*var));
    const std::string name = AddConst(var->name() + (var->op() == "VarHandleOp" ? "/value" : ":0"), t);
    var_inits_.emplace(var->name(), name);
    return std::vector<std::string>{name};
  }
  if (op == "NoOp") return std::vector<std::string>{};
  if (op == "ParseExample" || op == "ParseExampleV2") return ConvertParseExample(c);

  // Elementwise.
  static const std::map<std::string, std::string> kBinary = {
      {"Add", "Add"}, {"AddV2", "Add"}, {"Sub", "Sub"}, {"Mul", "Mul"}, {"RealDiv", "Div"}, {"Div", "Div"},
      {"Maximum", "Max"}, {"Minimum", "Min"}, {"Pow", "Pow"}, {"Equal", "Equal"}, {"Greater", "Greater"},
      {"Less", "Less"}, {"GreaterEqual", "GreaterOrEqual"}, {"LessEqual", "LessOrEqual"}, {"LogicalAnd", "And"},
      {"LogicalOr", "Or"}};
  static const std::map<std::string, std::string> kUnary = {
      {"Relu", "Relu"}, {"Sigmoid", "Sigmoid"}, {"Tanh", "Tanh"}, {"Exp", "Exp"}, {"Log", "Log"}, {"Neg", "Neg"},
      {"Abs", "Abs"}, {"Sqrt", "Sqrt"}, {"Floor", "Floor"}, {"Ceil", "Ceil"}, {"Erf", "Erf"},
      {"Softplus", "Softplus"}, {"Selu", "Selu"}, {"Elu", "Elu"}, {"Reciprocal", "Reciprocal"},
      {"Inv", "Reciprocal"}, {"LogicalNot", "Not"}, {"Sign", "Sign"}, {"Round", "Round"}};
  if (auto b = kBinary.find(op); b != kBinary.end()) {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    STRATA_ASSIGN_OR_RETURN(std::string y, In(c, 1));
    return std::vector<std::string>{Emit1(c, b->second, {x, y}, {}, true)};
  }
  if (auto u = kUnary.find(op); u != kUnary.end()) {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    return std::vector<std::string>{Emit1(c, u->second, {x}, {}, true)};
  }
  if (op == "BiasAdd" || op == "BiasAddV1") {
    if (AttrS(c, "data_format", "NHWC") != "NHWC") return Unsupported(c, "data_format NCHW is not supported");
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    STRATA_ASSIGN_OR_RETURN(std::string b, In(c, 1));
    return std::vector<std::string>{Emit1(c, "Add", {x, b}, {}, true)};
  }
  if (op == "SquaredDifference") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    STRATA_ASSIGN_OR_RETURN(std::string y, In(c, 1));
    const std::string d = Emit1(c, "Sub", {x, y});
    return std::vector<std::string>{Emit1(c, "Mul", {d, d}, {}, true)};
  }
  if (op == "Square") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    return std::vector<std::string>{Emit1(c, "Mul", {x, x}, {}, true)};
  }
  if (op == "Rsqrt") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    return std::vector<std::string>{Emit1(c, "Reciprocal", {Emit1(c, "Sqrt", {x})}, {}, true)};
  }
  if (op == "Relu6") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    const std::string lo = AddConst(NewName(c), Tensor::Scalar<float>(0.f));
    const std::string hi = AddConst(NewName(c), Tensor::Scalar<float>(6.f));
    return std::vector<std::string>{Emit1(c, "Clip", {x, lo, hi}, {}, true)};
  }
  if (op == "LeakyRelu") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    return std::vector<std::string>{Emit1(c, "LeakyRelu", {x}, {{"alpha", A::Float(AttrF(c, "alpha", 0.2f))}}, true)};
  }
  if (op == "Softmax" || op == "LogSoftmax") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    return std::vector<std::string>{Emit1(c, op, {x}, {{"axis", A::Int(-1)}}, true)};
  }
  if (op == "AddN") {
    std::vector<std::string> ins;
    for (int i = 0; i < NumInputs(c); ++i) {
      STRATA_ASSIGN_OR_RETURN(std::string v, In(c, i));
      ins.push_back(v);
    }
    return std::vector<std::string>{Emit1(c, "Sum", ins, {}, true)};
  }
  if (op == "Select" || op == "SelectV2") {
    STRATA_ASSIGN_OR_RETURN(std::string cond, In(c, 0));
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 1));
    STRATA_ASSIGN_OR_RETURN(std::string y, In(c, 2));
    return std::vector<std::string>{Emit1(c, "Where", {cond, x, y}, {}, true)};
  }
  if (op == "MatMul" || op == "BatchMatMul" || op == "BatchMatMulV2" || op == "BatchMatMulV3") {
    STRATA_ASSIGN_OR_RETURN(std::string a, In(c, 0));
    STRATA_ASSIGN_OR_RETURN(std::string b, In(c, 1));
    const bool ta = op == "MatMul" ? AttrB(c, "transpose_a", false) : AttrB(c, "adj_x", false);
    const bool tb = op == "MatMul" ? AttrB(c, "transpose_b", false) : AttrB(c, "adj_y", false);
    if (op != "MatMul" && (ta || tb)) return Unsupported(c, "adj_x/adj_y are not supported");
    if (ta) a = Emit1(c, "Transpose", {a}, {{"perm", A::Ints({1, 0})}});
    if (tb) b = Emit1(c, "Transpose", {b}, {{"perm", A::Ints({1, 0})}});
    return std::vector<std::string>{Emit1(c, "MatMul", {a, b}, {}, true)};
  }
  if (op == "Conv2D") return ConvertConv(c, false);
  if (op == "DepthwiseConv2dNative") return ConvertConv(c, true);
  if (op == "MaxPool") return ConvertPool(c, "MaxPool");
  if (op == "AvgPool") return ConvertPool(c, "AveragePool");
  if (op == "FusedBatchNorm" || op == "FusedBatchNormV2" || op == "FusedBatchNormV3") return ConvertBatchNorm(c);
  if (op == "Mean") return ConvertReduce(c, "ReduceMean");
  if (op == "Sum") return ConvertReduce(c, "ReduceSum");
  if (op == "Max") return ConvertReduce(c, "ReduceMax");
  if (op == "Min") return ConvertReduce(c, "ReduceMin");
  if (op == "Prod") return ConvertReduce(c, "ReduceProd");
  if (op == "Reshape") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    STRATA_ASSIGN_OR_RETURN(std::string s, In(c, 1));
    auto k = consts_.find(s);
    if (k != consts_.end()) {
      STRATA_ASSIGN_OR_RETURN(auto dims, IntValues(k->second, Importer::Describe(c.r.frame, c.n) + " shape"));
      s = ConstInt64s(c, dims);
    } else {
      s = Emit1(c, "Cast", {s}, {{"to", A::Int(7)}});
    }
    return std::vector<std::string>{Emit1(c, "Reshape", {x, s}, {}, true)};
  }
  if (op == "Shape") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    const int out_type = static_cast<int>(Attr(c, "out_type") ? Attr(c, "out_type")->type() : 3);
    if (out_type == 9) return std::vector<std::string>{Emit1(c, "Shape", {x}, {}, true)};
    return std::vector<std::string>{Emit1(c, "Cast", {Emit1(c, "Shape", {x})}, {{"to", A::Int(6)}}, true)};
  }
  if (op == "Cast") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    const DType to = DTypeOfTf(Attr(c, "DstT") ? Attr(c, "DstT")->type() : 0);
    if (OnnxTypeOf(to) == 0 || to == DType::kString) return Unsupported(c, "cast to this dtype is not supported");
    return std::vector<std::string>{Emit1(c, "Cast", {x}, {{"to", A::Int(OnnxTypeOf(to))}}, true)};
  }
  if (op == "Transpose") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    STRATA_ASSIGN_OR_RETURN(auto perm, ConstInts(c, 1));
    return std::vector<std::string>{Emit1(c, "Transpose", {x}, {{"perm", A::Ints(perm)}}, true)};
  }
  if (op == "ExpandDims") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    STRATA_ASSIGN_OR_RETURN(auto dim, ConstInts(c, 1));
    if (dim.size() != 1) return Unsupported(c, "'dim' must hold one value");
    return std::vector<std::string>{Emit1(c, "Unsqueeze", {x, ConstInt64s(c, dim)}, {}, true)};
  }
  if (op == "Squeeze") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    const auto axes = AttrInts(c, "squeeze_dims", {});
    if (axes.empty()) return std::vector<std::string>{Emit1(c, "Squeeze", {x}, {}, true)};
    return std::vector<std::string>{Emit1(c, "Squeeze", {x, ConstInt64s(c, axes)}, {}, true)};
  }
  if (op == "Pack") {
    const int64_t axis = AttrI(c, "axis", 0);
    std::vector<std::string> parts;
    for (int i = 0; i < NumInputs(c); ++i) {
      STRATA_ASSIGN_OR_RETURN(std::string v, In(c, i));
      parts.push_back(Emit1(c, "Unsqueeze", {v, ConstInt64s(c, {axis})}));
    }
    return std::vector<std::string>{Emit1(c, "Concat", parts, {{"axis", A::Int(axis)}}, true)};
  }
  if (op == "ConcatV2") {
    const int n = NumInputs(c);
    if (n < 2) return Unsupported(c, "needs at least one value and the axis");
    STRATA_ASSIGN_OR_RETURN(auto axis, ConstInts(c, n - 1));
    if (axis.size() != 1) return Unsupported(c, "'axis' must be a scalar");
    std::vector<std::string> parts;
    for (int i = 0; i + 1 < n; ++i) {
      STRATA_ASSIGN_OR_RETURN(std::string v, In(c, i));
      parts.push_back(v);
    }
    return std::vector<std::string>{Emit1(c, "Concat", parts, {{"axis", A::Int(axis[0])}}, true)};
  }
  if (op == "Pad" || op == "PadV2" || op == "MirrorPad") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    STRATA_ASSIGN_OR_RETURN(auto p, ConstInts(c, 1));
    const size_t r = p.size() / 2;
    std::vector<int64_t> pads(2 * r);
    for (size_t i = 0; i < r; ++i) {
      pads[i] = p[2 * i];
      pads[r + i] = p[2 * i + 1];
    }
    std::vector<std::string> ins = {x, ConstInt64s(c, pads)};
    graph::AttributeMap attrs;
    if (op == "PadV2") {
      STRATA_ASSIGN_OR_RETURN(std::string v, In(c, 2));
      ins.push_back(v);
    } else if (op == "MirrorPad") {
      const std::string mode = AttrS(c, "mode", "REFLECT");
      if (mode != "REFLECT") return Unsupported(c, "only REFLECT mirror padding is supported");
      attrs["mode"] = A::String("reflect");
    }
    return std::vector<std::string>{Emit1(c, "Pad", ins, attrs, true)};
  }
  if (op == "StridedSlice") return ConvertStridedSlice(c);
  if (op == "ResizeBilinear" || op == "ResizeNearestNeighbor") return ConvertResize(c);
  if (op == "ArgMax" || op == "ArgMin") {
    STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
    STRATA_ASSIGN_OR_RETURN(auto axis, ConstInts(c, 1));
    if (axis.size() != 1) return Unsupported(c, "'dimension' must be a scalar");
    std::string v = Emit1(c, op, {x}, {{"axis", A::Int(axis[0])}, {"keepdims", A::Int(0)}});
    const int out_type = static_cast<int>(Attr(c, "output_type") ? Attr(c, "output_type")->type() : 9);
    return std::vector<std::string>{Emit1(c, "Cast", {v}, {{"to", A::Int(out_type == 3 ? 6 : 7)}}, true)};
  }
  return Unsupported(c, StrCat("op '", op, "' is not supported by strata's SavedModel importer (see docs/serving.md, "
                               "\"SavedModels\", for the supported ops)"));
}

StatusOr<std::vector<std::string>> SigConverter::ConvertParseExample(Ctx& c) {
  const bool v2 = c.n.op() == "ParseExampleV2";
  STRATA_ASSIGN_OR_RETURN(std::string serialized, In(c, 0, true));
  if (serialized.rfind(kExamplesMarker, 0) != 0)
    return Unsupported(c, "parses tf.Examples that are not a string input of the signature");
  const int64_t ns = v2 ? AttrI(c, "num_sparse", 0) : AttrI(c, "Nsparse", 0);
  if (ns != 0) return Unsupported(c, "sparse features are not supported (dense features only)");
  if (v2 && Attr(c, "ragged_value_types") && Attr(c, "ragged_value_types")->list().type_size() > 0)
    return Unsupported(c, "ragged features are not supported");
  const auto* tdense = Attr(c, "Tdense");
  const auto* shapes = Attr(c, "dense_shapes");
  const int nd = tdense ? tdense->list().type_size() : 0;
  std::vector<std::string> keys;
  if (v2) {
    STRATA_ASSIGN_OR_RETURN(Tensor k, ConstIn(c, 3));
    if (k.dtype() != DType::kString) return Unsupported(c, "dense_keys must be a string constant");
    for (int64_t i = 0; i < k.num_elements(); ++i) keys.push_back(k.data<std::string>()[i]);
  } else {
    for (int i = 0; i < nd; ++i) {
      STRATA_ASSIGN_OR_RETURN(Tensor k, ConstIn(c, 2 + i));
      if (k.dtype() != DType::kString || k.num_elements() != 1) return Unsupported(c, "dense_keys must be strings");
      keys.push_back(k.data<std::string>()[0]);
    }
  }
  if (static_cast<int>(keys.size()) != nd || !shapes || shapes->list().shape_size() != nd)
    return InvalidArgumentError(Importer::Describe(c.r.frame, c.n), ": ", keys.size(), " dense keys for ", nd,
                                " dense types");
  std::vector<std::string> outs;
  for (int i = 0; i < nd; ++i) {
    const std::string& key = keys[i];
    if (!pending_features_.count(key)) {
      SignatureTensor f;
      f.alias = key;
      f.name = key;
      f.dtype = DTypeOfTf(tdense->list().type(i));
      f.shape.rank_known = true;
      f.shape.dims.push_back(Dim());
      PartialShape fs = ShapeFromTf(shapes->list().shape(i));
      if (!fs.rank_known) return Unsupported(c, StrCat("feature '", key, "' has an unknown shape"));
      for (const auto& d : fs.dims) {
        if (!d.known()) return Unsupported(c, StrCat("feature '", key, "' has a variable-length dimension"));
        f.shape.dims.push_back(d);
      }
      pending_features_.emplace(key, f);
    }
    outs.push_back(key);
  }
  return outs;
}

Status SigConverter::Spatial(Ctx& c, graph::AttributeMap* attrs) {
  using A = graph::Attribute;
  const std::string padding = AttrS(c, "padding", "VALID");
  const auto strides = AttrInts(c, "strides", {1, 1, 1, 1});
  if (strides.size() != 4 || strides[0] != 1 || strides[3] != 1)
    return Unsupported(c, "strides must be [1, h, w, 1]");
  (*attrs)["strides"] = A::Ints({strides[1], strides[2]});
  if (padding == "SAME") {
    (*attrs)["auto_pad"] = A::String("SAME_UPPER");
  } else if (padding == "VALID") {
    (*attrs)["pads"] = A::Ints({0, 0, 0, 0});
  } else if (padding == "EXPLICIT") {
    const auto p = AttrInts(c, "explicit_paddings", {});
    if (p.size() != 8) return Unsupported(c, "explicit_paddings must have 8 values");
    (*attrs)["pads"] = A::Ints({p[2], p[4], p[3], p[5]});
  } else {
    return Unsupported(c, StrCat("padding '", padding, "' is not supported"));
  }
  return Status::OK();
}

StatusOr<std::vector<std::string>> SigConverter::ConvertConv(Ctx& c, bool depthwise) {
  using A = graph::Attribute;
  if (AttrS(c, "data_format", "NHWC") != "NHWC") return Unsupported(c, "data_format NCHW is not supported");
  STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
  STRATA_ASSIGN_OR_RETURN(Tensor w, ConstIn(c, 1));
  if (w.rank() != 4 || w.dtype() != DType::kFloat32)
    return Unsupported(c, StrCat("filter must be a float32 constant of rank 4, got ", w.TypeString()));
  const int64_t kh = w.dim(0), kw = w.dim(1), ci = w.dim(2), co = w.dim(3);
  // HWIO (or H,W,C,M for depthwise) -> OIHW (or C*M,1,H,W).
  const int64_t out_c = depthwise ? ci * co : co;
  const int64_t in_c = depthwise ? 1 : ci;
  Tensor wt = Tensor::Empty(DType::kFloat32, Shape({out_c, in_c, kh, kw}));
  const float* src = w.data<float>();
  float* dst = wt.data<float>();
  for (int64_t h = 0; h < kh; ++h)
    for (int64_t ww = 0; ww < kw; ++ww)
      for (int64_t i = 0; i < ci; ++i)
        for (int64_t o = 0; o < co; ++o) {
          const float v = src[((h * kw + ww) * ci + i) * co + o];
          if (depthwise)
            dst[(((i * co + o) * 1 + 0) * kh + h) * kw + ww] = v;
          else
            dst[((o * ci + i) * kh + h) * kw + ww] = v;
        }
  graph::AttributeMap attrs;
  STRATA_RETURN_IF_ERROR(Spatial(c, &attrs));
  const auto dil = AttrInts(c, "dilations", {1, 1, 1, 1});
  if (dil.size() != 4) return Unsupported(c, "dilations must have 4 values");
  attrs["dilations"] = A::Ints({dil[1], dil[2]});
  attrs["kernel_shape"] = A::Ints({kh, kw});
  if (depthwise) attrs["group"] = A::Int(ci);
  const std::string wname = AddConst(NewName(c), wt);
  const std::string xn = Emit1(c, "Transpose", {x}, {{"perm", A::Ints({0, 3, 1, 2})}});
  const std::string y = Emit1(c, "Conv", {xn, wname}, attrs);
  return std::vector<std::string>{Emit1(c, "Transpose", {y}, {{"perm", A::Ints({0, 2, 3, 1})}}, true)};
}

StatusOr<std::vector<std::string>> SigConverter::ConvertPool(Ctx& c, const std::string& onnx_op) {
  using A = graph::Attribute;
  if (AttrS(c, "data_format", "NHWC") != "NHWC") return Unsupported(c, "data_format NCHW is not supported");
  STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
  const auto k = AttrInts(c, "ksize", {});
  if (k.size() != 4 || k[0] != 1 || k[3] != 1) return Unsupported(c, "ksize must be [1, h, w, 1]");
  graph::AttributeMap attrs;
  STRATA_RETURN_IF_ERROR(Spatial(c, &attrs));
  attrs["kernel_shape"] = A::Ints({k[1], k[2]});
  if (onnx_op == "AveragePool") attrs["count_include_pad"] = A::Int(0);
  const std::string xn = Emit1(c, "Transpose", {x}, {{"perm", A::Ints({0, 3, 1, 2})}});
  const std::string y = Emit1(c, onnx_op, {xn}, attrs);
  return std::vector<std::string>{Emit1(c, "Transpose", {y}, {{"perm", A::Ints({0, 2, 3, 1})}}, true)};
}

StatusOr<std::vector<std::string>> SigConverter::ConvertBatchNorm(Ctx& c) {
  if (AttrB(c, "is_training", true)) return Unsupported(c, "is_training=true (training-mode batch norm) is not supported");
  if (AttrS(c, "data_format", "NHWC") != "NHWC") return Unsupported(c, "data_format NCHW is not supported");
  STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
  std::vector<Tensor> p;
  for (int i = 1; i <= 4; ++i) {
    STRATA_ASSIGN_OR_RETURN(Tensor t, ConstIn(c, i));
    if (t.dtype() != DType::kFloat32 || t.rank() != 1) return Unsupported(c, "scale/offset/mean/variance must be float vectors");
    p.push_back(t);
  }
  const int64_t n = p[0].num_elements();
  for (const auto& t : p)
    if (t.num_elements() != n) return Unsupported(c, "scale/offset/mean/variance differ in length");
  const float eps = AttrF(c, "epsilon", 1e-4f);
  std::vector<float> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = p[0].data<float>()[i] / std::sqrt(p[3].data<float>()[i] + eps);
    b[i] = p[1].data<float>()[i] - p[2].data<float>()[i] * a[i];
  }
  const std::string an = AddConst(NewName(c), Tensor::FromVector(a));
  const std::string bn = AddConst(NewName(c), Tensor::FromVector(b));
  const std::string y = Emit1(c, "Add", {Emit1(c, "Mul", {x, an}), bn}, {}, true);
  return std::vector<std::string>{y, "", "", "", "", ""};
}

StatusOr<std::vector<std::string>> SigConverter::ConvertReduce(Ctx& c, const std::string& onnx_op) {
  using A = graph::Attribute;
  STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
  STRATA_ASSIGN_OR_RETURN(auto axes, ConstInts(c, 1));
  const int64_t keep = AttrB(c, "keep_dims", false) ? 1 : 0;
  if (axes.empty()) return std::vector<std::string>{Emit1(c, "Identity", {x}, {}, true)};
  if (onnx_op == "ReduceSum")
    return std::vector<std::string>{Emit1(c, onnx_op, {x, ConstInt64s(c, axes)}, {{"keepdims", A::Int(keep)}}, true)};
  return std::vector<std::string>{
      Emit1(c, onnx_op, {x}, {{"axes", A::Ints(axes)}, {"keepdims", A::Int(keep)}}, true)};
}

// ResizeBilinear (NHWC images, size = [new_height, new_width]) -> ONNX Resize over H and W, with sizes
// [N, new_height, new_width, C] taken from the input's shape. TF's sampling attributes map onto
// coordinate_transformation_mode: align_corners -> align_corners; half_pixel_centers -> half_pixel (TF2's
// tf.image.resize and Keras's Resizing layer); neither -> asymmetric (TF1's default).
//
// ResizeNearestNeighbor is two Gathers (H, then W) of source indices computed as TF computes them, in float32:
// scale = in / out (align_corners: (in - 1) / (out - 1)), index = floor((x + 0.5) * scale) with half_pixel_centers,
// round(x * scale) with align_corners, floor(x * scale) otherwise, at most in - 1. ONNX Resize's nearest modes
// describe the same sampling but in exact arithmetic; where (x + 0.5) * in / out is mathematically an integer TF's
// float32 product can fall just below it and pick the previous pixel, so Resize would not give TF's values.
StatusOr<std::vector<std::string>> SigConverter::ConvertResize(Ctx& c) {
  using A = graph::Attribute;
  const bool bilinear = c.n.op() == "ResizeBilinear";
  const bool align = AttrB(c, "align_corners", false), half = AttrB(c, "half_pixel_centers", false);
  if (align && half) return Unsupported(c, "align_corners and half_pixel_centers are both true (TF refuses this too)");
  STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
  STRATA_ASSIGN_OR_RETURN(std::string size, In(c, 1));
  std::vector<int64_t> hw;
  auto k = consts_.find(size);
  if (k != consts_.end()) {
    STRATA_ASSIGN_OR_RETURN(hw, IntValues(k->second, Importer::Describe(c.r.frame, c.n) + " size"));
    if (hw.size() != 2 || hw[0] <= 0 || hw[1] <= 0)
      return Unsupported(c, StrCat("size must be two positive values [height, width], got ", hw.size(), " values"));
    size = ConstInt64s(c, hw);
  } else if (!bilinear) {
    return Unsupported(c, "the size of a nearest-neighbour resize must be a constant");
  } else {
    size = Emit1(c, "Cast", {size}, {{"to", A::Int(7)}});
  }
  const std::string shape = Emit1(c, "Shape", {x});
  auto dim = [&](int64_t d) {
    return Emit1(c, "Slice", {shape, ConstInt64s(c, {d}), ConstInt64s(c, {d + 1}), ConstInt64s(c, {0})});
  };
  if (bilinear) {
    const std::string sizes = Emit1(c, "Concat", {dim(0), size, dim(3)}, {{"axis", A::Int(0)}});
    graph::AttributeMap attrs;
    attrs["mode"] = A::String("linear");
    attrs["coordinate_transformation_mode"] = A::String(align ? "align_corners" : half ? "half_pixel" : "asymmetric");
    return std::vector<std::string>{Emit1(c, "Resize", {x, "", "", sizes}, attrs, true)};
  }
  for (int axis : {1, 2}) {
    const int64_t out = hw[axis - 1];
    const std::string in = dim(axis);
    const std::string in_f = Emit1(c, "Cast", {in}, {{"to", A::Int(1)}});
    std::string scale;
    if (align && out > 1) {
      const std::string one = AddConst(NewName(c), Tensor::FromVector<float>({1.f}));
      scale = Emit1(c, "Div", {Emit1(c, "Sub", {in_f, one}), AddConst(NewName(c), Tensor::FromVector<float>(
                                                                 {static_cast<float>(out - 1)}))});
    } else {
      scale = Emit1(c, "Div", {in_f, AddConst(NewName(c), Tensor::FromVector<float>({static_cast<float>(out)}))});
    }
    std::vector<float> pos(static_cast<size_t>(out));
    for (int64_t i = 0; i < out; ++i) pos[i] = half ? static_cast<float>(i) + 0.5f : static_cast<float>(i);
    std::string src = Emit1(c, "Mul", {AddConst(NewName(c), Tensor::FromVector<float>(pos)), scale});
    if (align) src = Emit1(c, "Add", {src, AddConst(NewName(c), Tensor::FromVector<float>({0.5f}))});  // roundf, src >= 0
    src = Emit1(c, "Cast", {Emit1(c, "Floor", {src})}, {{"to", A::Int(7)}});
    const std::string last = Emit1(c, "Sub", {in, ConstInt64s(c, {1})});
    src = Emit1(c, "Min", {src, last});
    x = Emit1(c, "Gather", {x, src}, {{"axis", A::Int(axis)}}, axis == 2);
  }
  return std::vector<std::string>{x};
}

StatusOr<std::vector<std::string>> SigConverter::ConvertStridedSlice(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(std::string x, In(c, 0));
  STRATA_ASSIGN_OR_RETURN(auto begin, ConstInts(c, 1));
  STRATA_ASSIGN_OR_RETURN(auto end, ConstInts(c, 2));
  STRATA_ASSIGN_OR_RETURN(auto strides, ConstInts(c, 3));
  if (begin.size() != end.size() || begin.size() != strides.size())
    return Unsupported(c, "begin, end and strides differ in length");
  const int64_t bm = AttrI(c, "begin_mask", 0), em = AttrI(c, "end_mask", 0);
  const int64_t ellipsis = AttrI(c, "ellipsis_mask", 0), new_axis = AttrI(c, "new_axis_mask", 0);
  const int64_t shrink = AttrI(c, "shrink_axis_mask", 0);
  if (ellipsis != 0 || new_axis != 0) return Unsupported(c, "ellipsis_mask and new_axis_mask are not supported");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> starts, ends, axes, steps, squeeze;
  for (size_t i = 0; i < begin.size(); ++i) {
    const int64_t s = strides[i];
    if (s == 0) return Unsupported(c, "a stride is 0");
    int64_t b = begin[i], e = end[i];
    if (shrink & (int64_t{1} << i)) {
      e = b == -1 ? kMax : b + 1;
      squeeze.push_back(static_cast<int64_t>(i));
      starts.push_back(b);
      ends.push_back(e);
      steps.push_back(1);
      axes.push_back(static_cast<int64_t>(i));
      continue;
    }
    if (bm & (int64_t{1} << i)) b = s > 0 ? 0 : kMax;
    if (em & (int64_t{1} << i)) e = s > 0 ? kMax : kMin;
    starts.push_back(b);
    ends.push_back(e);
    steps.push_back(s);
    axes.push_back(static_cast<int64_t>(i));
  }
  const bool need_squeeze = !squeeze.empty();
  std::string y = Emit1(c, "Slice", {x, ConstInt64s(c, starts), ConstInt64s(c, ends), ConstInt64s(c, axes),
                                     ConstInt64s(c, steps)}, {}, !need_squeeze);
  if (need_squeeze) y = Emit1(c, "Squeeze", {y, ConstInt64s(c, squeeze)}, {}, true);
  return std::vector<std::string>{y};
}

std::vector<SignatureTensor> SortedTensors(const google::protobuf::Map<std::string, tensorflow::TensorInfo>& m,
                                           Status* status, const std::string& what) {
  std::vector<SignatureTensor> out;
  for (const auto& [alias, info] : m) {
    SignatureTensor t;
    t.alias = alias;
    t.name = info.name();
    if (info.name().empty() && status->ok())
      *status = UnimplementedError(what, " '", alias, "' is not a dense tensor (sparse and composite tensors are not "
                                   "supported)");
    t.dtype = DTypeOfTf(info.dtype());
    if (info.has_tensor_shape()) t.shape = ShapeFromTf(info.tensor_shape());  // absent: unknown rank
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.alias < b.alias; });
  return out;
}

}  // namespace

StatusOr<ImportedSignature> Importer::ImportSignature(const std::string& key, const tensorflow::SignatureDef& sd) {
  ImportedSignature sig;
  sig.key = key;
  sig.method_name = sd.method_name();
  Status st;
  sig.inputs = SortedTensors(sd.inputs(), &st, "input");
  sig.outputs = SortedTensors(sd.outputs(), &st, "output");
  STRATA_RETURN_IF_ERROR(st);
  if (sig.outputs.empty()) return InvalidArgumentError("the signature has no outputs");
  auto model = std::make_shared<graph::Model>();
  model->opset_imports[""] = kOpset;
  model->producer_name = "strata (TensorFlow SavedModel import)";
  model->base_dir = dir_;
  graph::Graph& g = model->graph;
  g.name = key;
  SigConverter conv(this, &g, &sig);
  for (const auto& in : sig.inputs) {
    auto r = Lookup(top_, in.name);
    if (!r.ok())
      return NotFoundError("input '", in.alias, "' names tensor '", in.name, "', which is not in the graph: ",
                           r.status().message());
    if (in.dtype == DType::kUndefined)
      return UnimplementedError("input '", in.alias, "' has a TF dtype strata does not support");
    // String inputs may hold serialized tf.Examples. TF1 exports sometimes declare them DT_FLOAT in the signature
    // (half_plus_three's regress signature), so the placeholder's own dtype decides.
    auto dt = r->node->attr().find("dtype");
    const bool is_string = in.dtype == DType::kString || (dt != r->node->attr().end() && dt->second.type() == 7);
    conv.AddFeed(in.name, is_string ? StrCat(kExamplesMarker, in.name) : in.name);
  }
  std::vector<std::pair<std::string, std::string>> out_values;
  for (const auto& out : sig.outputs) {
    auto r = Lookup(top_, out.name);
    if (!r.ok())
      return NotFoundError("output '", out.alias, "' names tensor '", out.name, "', which is not in the graph: ",
                           r.status().message());
    STRATA_ASSIGN_OR_RETURN(std::string v, conv.ValueOf(*r));
    if (v.rfind(kExamplesMarker, 0) == 0) v = v.substr(sizeof(kExamplesMarker) - 1);
    out_values.emplace_back(out.name, v);
  }
  // Graph inputs: the parsed features, then the signature inputs fed directly.
  for (const auto& f : sig.features) g.inputs.push_back({f.name, f.dtype, f.shape, "tf.Example feature"});
  for (const auto& in : sig.inputs) {
    if (conv.IsExamplesInput(in.name) && !conv.raw_string_inputs().count(in.name)) {
      bool is_output = false;
      for (const auto& [n, v] : out_values) is_output |= v == in.name;
      if (!is_output) continue;  // consumed by ParseExample only
    }
    // The declared shape is not enforced: TF does not check a fed tensor against the placeholder's shape (TF
    // Serving's half_plus_two declares x [-1, 1] and answers {"instances": [1.0, 2.0, 5.0]}).
    g.inputs.push_back({in.name, conv.IsExamplesInput(in.name) ? DType::kString : in.dtype, PartialShape(), ""});
  }
  if (!sig.features.empty() && g.inputs.size() != sig.features.size())
    return UnimplementedError("the signature mixes parsed tf.Example features with other inputs");
  std::set<std::string> added;
  for (size_t i = 0; i < sig.outputs.size(); ++i) {
    const auto& [name, v] = out_values[i];
    if (!added.insert(name).second) continue;  // two aliases of one tensor: one graph output
    if (v != name) {
      graph::Node id;
      id.name = name + "/_output";
      id.op_type = "Identity";
      id.opset = kOpset;
      id.inputs = {v};
      id.outputs = {name};
      g.nodes.push_back(std::move(id));
    }
    g.outputs.push_back({name, sig.outputs[i].dtype, sig.outputs[i].shape, sig.outputs[i].alias});
  }
  STRATA_RETURN_IF_ERROR(graph::TopologicalSort(&g));
  STRATA_RETURN_IF_ERROR(SinkLayoutTransposes(&g));
  sig.model = std::move(model);
  return sig;
}

}  // namespace strata::tf
