// strata IR -> ModelProto.
#include "core/file_util.h"
#include "onnx/tensor_proto.h"
#include "strata/onnx.h"

namespace strata::onnx {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::ValueInfo;

void ValueInfoToProto(const ValueInfo& v, ::onnx::ValueInfoProto* p) {
  p->set_name(v.name);
  if (!v.doc.empty()) p->set_doc_string(v.doc);
  if (v.dtype == DType::kUndefined) return;
  auto* tt = p->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(v.dtype));
  if (!v.shape.rank_known) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : v.shape.dims) {
    auto* dim = shape->add_dim();
    if (d.known())
      dim->set_dim_value(d.value);
    else if (!d.symbol.empty())
      dim->set_dim_param(d.symbol);
  }
}

void GraphToProto(const Graph& g, ::onnx::GraphProto* gp);

void AttributeToProto(const std::string& name, const Attribute& a, ::onnx::AttributeProto* ap) {
  using AP = ::onnx::AttributeProto;
  ap->set_name(name);
  switch (a.type()) {
    case Attribute::Type::kFloat: ap->set_type(AP::FLOAT); ap->set_f(a.f()); break;
    case Attribute::Type::kInt: ap->set_type(AP::INT); ap->set_i(a.i()); break;
    case Attribute::Type::kString: ap->set_type(AP::STRING); ap->set_s(a.s()); break;
    case Attribute::Type::kTensor: ap->set_type(AP::TENSOR); TensorToProto(a.t(), ap->mutable_t()); break;
    case Attribute::Type::kGraph: ap->set_type(AP::GRAPH); GraphToProto(*a.g(), ap->mutable_g()); break;
    case Attribute::Type::kFloats:
      ap->set_type(AP::FLOATS);
      for (float f : a.floats()) ap->add_floats(f);
      break;
    case Attribute::Type::kInts:
      ap->set_type(AP::INTS);
      for (int64_t i : a.ints()) ap->add_ints(i);
      break;
    case Attribute::Type::kStrings:
      ap->set_type(AP::STRINGS);
      for (const auto& s : a.strings()) ap->add_strings(s);
      break;
    case Attribute::Type::kTensors:
      ap->set_type(AP::TENSORS);
      for (const auto& t : a.tensors()) TensorToProto(t, ap->add_tensors());
      break;
    case Attribute::Type::kGraphs:
      ap->set_type(AP::GRAPHS);
      for (const auto& g : a.graphs()) GraphToProto(*g, ap->add_graphs());
      break;
    case Attribute::Type::kUndefined: break;
  }
}

void GraphToProto(const Graph& g, ::onnx::GraphProto* gp) {
  gp->set_name(g.name.empty() ? "graph" : g.name);
  if (!g.doc.empty()) gp->set_doc_string(g.doc);
  for (const auto& [name, t] : g.initializers) {
    auto* tp = gp->add_initializer();
    TensorToProto(t, tp);
    tp->set_name(name);
  }
  for (const auto& v : g.inputs) ValueInfoToProto(v, gp->add_input());
  for (const auto& v : g.outputs) ValueInfoToProto(v, gp->add_output());
  for (const auto& [name, v] : g.value_info) ValueInfoToProto(v, gp->add_value_info());
  for (const auto& n : g.nodes) {
    auto* np = gp->add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    if (!n.domain.empty()) np->set_domain(n.domain);
    if (!n.doc.empty()) np->set_doc_string(n.doc);
    for (const auto& in : n.inputs) np->add_input(in);
    for (const auto& out : n.outputs) np->add_output(out);
    for (const auto& [name, a] : n.attrs) AttributeToProto(name, a, np->add_attribute());
  }
}

}  // namespace

StatusOr<std::string> SerializeModel(const graph::Model& model) {
  ::onnx::ModelProto mp;
  mp.set_ir_version(model.ir_version);
  mp.set_producer_name(model.producer_name);
  mp.set_producer_version(model.producer_version);
  if (!model.domain.empty()) mp.set_domain(model.domain);
  mp.set_model_version(model.model_version);
  if (!model.doc.empty()) mp.set_doc_string(model.doc);
  for (const auto& [k, v] : model.metadata) {
    auto* e = mp.add_metadata_props();
    e->set_key(k);
    e->set_value(v);
  }
  for (const auto& [domain, version] : model.opset_imports) {
    auto* op = mp.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  GraphToProto(model.graph, mp.mutable_graph());
  std::string out;
  if (!mp.SerializeToString(&out))
    return InvalidArgumentError("the model cannot be serialised as ONNX (over 2 GB? store weights externally)");
  return out;
}

Status SaveModel(const graph::Model& model, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string bytes, SerializeModel(model));
  return WriteFileAtomic(path, bytes);
}

StatusOr<std::string> SerializeTensorProto(const Tensor& t, const std::string& name) {
  ::onnx::TensorProto tp;
  TensorToProto(t, &tp);
  tp.set_name(name);
  return tp.SerializeAsString();
}

}  // namespace strata::onnx
