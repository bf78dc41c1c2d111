// ModelProto -> strata IR.
#include <onnx/checker.h>

#include <set>

#include "core/file_util.h"
#include "onnx/tensor_proto.h"
#include "strata/onnx.h"

namespace strata::onnx {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::Model;
using graph::Node;
using graph::ValueInfo;

struct ImportContext {
  std::string base_dir;
  std::string where;
  std::map<std::string, int64_t> opsets;
};

std::string NormalizeDomain(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }

Status ConvertValueInfo(const ::onnx::ValueInfoProto& p, ValueInfo* out, std::string_view where) {
  out->name = p.name();
  out->doc = p.doc_string();
  if (!p.has_type()) return Status::OK();
  const auto& type = p.type();
  if (type.value_case() != ::onnx::TypeProto::kTensorType) {
    // Sequences, maps and optionals: not supported as graph inputs/outputs; left untyped here, rejected when used.
    out->dtype = DType::kUndefined;
    return Status::OK();
  }
  const auto& tt = type.tensor_type();
  if (tt.elem_type() != 0) {
    auto dt = DTypeFromOnnx(tt.elem_type());
    if (!dt.ok()) return Status(dt.status()).WithContext(StrCat(where, " value '", p.name(), "'"));
    out->dtype = *dt;
  }
  if (tt.has_shape()) {
    std::vector<Dim> dims;
    for (const auto& d : tt.shape().dim()) {
      if (d.value_case() == ::onnx::TensorShapeProto_Dimension::kDimValue && d.dim_value() >= 0)
        dims.emplace_back(d.dim_value());
      else if (d.value_case() == ::onnx::TensorShapeProto_Dimension::kDimParam)
        dims.push_back(Dim::Symbol(d.dim_param()));
      else
        dims.emplace_back();
    }
    out->shape = PartialShape::Of(std::move(dims));
  }
  return Status::OK();
}

Status ConvertGraph(const ::onnx::GraphProto& gp, ImportContext& ctx, Graph* g, int depth);

Status ConvertAttribute(const ::onnx::AttributeProto& ap, ImportContext& ctx, const std::string& where, Attribute* out,
                        int depth) {
  using AP = ::onnx::AttributeProto;
  if (!ap.ref_attr_name().empty())
    return UnimplementedError(where, ": attribute '", ap.name(), "' refers to a function attribute (ref_attr_name)");
  AP::AttributeType type = ap.type();
  if (type == AP::UNDEFINED) {  // very old models: infer from the field that is set
    if (ap.has_f()) type = AP::FLOAT;
    else if (ap.has_i()) type = AP::INT;
    else if (ap.has_s()) type = AP::STRING;
    else if (ap.has_t()) type = AP::TENSOR;
    else if (ap.has_g()) type = AP::GRAPH;
    else if (ap.floats_size()) type = AP::FLOATS;
    else if (ap.ints_size()) type = AP::INTS;
    else if (ap.strings_size()) type = AP::STRINGS;
    else if (ap.tensors_size()) type = AP::TENSORS;
    else if (ap.graphs_size()) type = AP::GRAPHS;
  }
  const std::string aw = StrCat(where, " attribute '", ap.name(), "'");
  switch (type) {
    case AP::FLOAT: *out = Attribute::Float(ap.f()); break;
    case AP::INT: *out = Attribute::Int(ap.i()); break;
    case AP::STRING: *out = Attribute::String(ap.s()); break;
    case AP::FLOATS: *out = Attribute::Floats({ap.floats().begin(), ap.floats().end()}); break;
    case AP::INTS: *out = Attribute::Ints({ap.ints().begin(), ap.ints().end()}); break;
    case AP::STRINGS: *out = Attribute::Strings({ap.strings().begin(), ap.strings().end()}); break;
    case AP::TENSOR: {
      STRATA_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(ap.t(), ctx.base_dir, aw));
      *out = Attribute::TensorValue(std::move(t));
      break;
    }
    case AP::TENSORS: {
      std::vector<Tensor> ts;
      for (const auto& tp : ap.tensors()) {
        STRATA_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(tp, ctx.base_dir, aw));
        ts.push_back(std::move(t));
      }
      *out = Attribute::Tensors(std::move(ts));
      break;
    }
    case AP::GRAPH: {
      auto sub = std::make_shared<Graph>();
      STRATA_RETURN_IF_ERROR(ConvertGraph(ap.g(), ctx, sub.get(), depth + 1));
      *out = Attribute::GraphValue(std::move(sub));
      break;
    }
    case AP::GRAPHS: {
      std::vector<std::shared_ptr<Graph>> subs;
      for (const auto& gp : ap.graphs()) {
        auto sub = std::make_shared<Graph>();
        STRATA_RETURN_IF_ERROR(ConvertGraph(gp, ctx, sub.get(), depth + 1));
        subs.push_back(std::move(sub));
      }
      *out = Attribute::Graphs(std::move(subs));
      break;
    }
    case AP::SPARSE_TENSOR:
    case AP::SPARSE_TENSORS:
      return UnimplementedError(aw, ": sparse tensor attributes are not supported");
    case AP::TYPE_PROTO:
    case AP::TYPE_PROTOS:
      return UnimplementedError(aw, ": type-proto attributes are not supported");
    default:
      return InvalidArgumentError(aw, ": unknown attribute type ", static_cast<int>(type));
  }
  return Status::OK();
}

Status ConvertGraph(const ::onnx::GraphProto& gp, ImportContext& ctx, Graph* g, int depth) {
  if (depth > 32) return InvalidArgumentError(ctx.where, ": subgraphs are nested more than 32 deep");
  g->name = gp.name();
  g->doc = gp.doc_string();
  if (gp.sparse_initializer_size() > 0)
    return UnimplementedError(ctx.where, ": graph '", gp.name(), "' has sparse initializers, which are not supported");
  for (const auto& tp : gp.initializer()) {
    if (tp.name().empty()) return InvalidArgumentError(ctx.where, ": an initializer has no name");
    STRATA_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(tp, ctx.base_dir, StrCat(ctx.where, " initializer")));
    if (!g->initializers.emplace(tp.name(), std::move(t)).second)
      return InvalidArgumentError(ctx.where, ": initializer '", tp.name(), "' is defined twice");
  }
  for (const auto& vi : gp.input()) {
    // IR < 4 lists initializers as inputs too; they are constants here.
    if (g->initializers.count(vi.name())) continue;
    ValueInfo v;
    STRATA_RETURN_IF_ERROR(ConvertValueInfo(vi, &v, ctx.where));
    g->inputs.push_back(std::move(v));
  }
  for (const auto& vi : gp.output()) {
    ValueInfo v;
    STRATA_RETURN_IF_ERROR(ConvertValueInfo(vi, &v, ctx.where));
    g->outputs.push_back(std::move(v));
  }
  for (const auto& vi : gp.value_info()) {
    ValueInfo v;
    STRATA_RETURN_IF_ERROR(ConvertValueInfo(vi, &v, ctx.where));
    g->value_info[v.name] = std::move(v);
  }
  g->nodes.reserve(gp.node_size());
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    Node n;
    n.name = np.name();
    n.op_type = np.op_type();
    n.domain = NormalizeDomain(np.domain());
    n.doc = np.doc_string();
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    if (n.op_type.empty()) return InvalidArgumentError(ctx.where, ": node ", i, " of graph '", gp.name(), "' has no op_type");
    auto opset = ctx.opsets.find(n.domain);
    if (opset == ctx.opsets.end())
      return InvalidArgumentError(ctx.where, ": ", n.Describe(), " uses domain '", np.domain(),
                                  "', which the model does not import (no opset_import entry)");
    n.opset = static_cast<int>(opset->second);
    const std::string where = StrCat(ctx.where, ": ", n.Describe());
    for (const auto& ap : np.attribute()) {
      Attribute a;
      STRATA_RETURN_IF_ERROR(ConvertAttribute(ap, ctx, where, &a, depth));
      if (!n.attrs.emplace(ap.name(), std::move(a)).second)
        return InvalidArgumentError(where, ": attribute '", ap.name(), "' is given twice");
    }
    g->nodes.push_back(std::move(n));
  }
  return Status::OK();
}

}  // namespace

StatusOr<Model> ParseModel(std::string_view bytes, const std::string& base_dir, std::string_view where) {
  ::onnx::ModelProto mp;
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return InvalidArgumentError(where, ": the file is over 2 GB; store the weights as external data");
  if (!mp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return InvalidArgumentError(where, ": not a valid ONNX model (the protobuf ModelProto does not parse; the file is ",
                                bytes.size(), " bytes — truncated or not an .onnx file?)");
  if (!mp.has_graph()) return InvalidArgumentError(where, ": the ONNX model has no graph");
  if (mp.functions_size() > 0)
    return UnimplementedError(where, ": the model defines ", mp.functions_size(),
                              " local functions, which are not supported");
  Model m;
  m.ir_version = mp.ir_version();
  m.producer_name = mp.producer_name();
  m.producer_version = mp.producer_version();
  m.domain = mp.domain();
  m.model_version = mp.model_version();
  m.doc = mp.doc_string();
  m.base_dir = base_dir;
  for (const auto& kv : mp.metadata_props()) m.metadata.emplace_back(kv.key(), kv.value());
  for (const auto& op : mp.opset_import()) m.opset_imports[NormalizeDomain(op.domain())] = op.version();
  if (mp.opset_import().empty()) m.opset_imports[""] = 1;  // IR v1/v2 models predate opset_import
  const int64_t opset = m.OpsetFor("");
  if (opset > 17)
    return UnimplementedError(where, ": the model uses ONNX opset ", opset, "; strata supports opsets up to 17");
  ImportContext ctx{base_dir, std::string(where), m.opset_imports};
  STRATA_RETURN_IF_ERROR(ConvertGraph(mp.graph(), ctx, &m.graph, 0));
  return m;
}

namespace {

// The bytes of a serialised protobuf file: a regular file (a FIFO or device is refused without blocking or reading)
// of at most protobuf's 2 GB, read whole.
StatusOr<std::string> ReadProtoFile(const std::string& path, std::string_view what) {
  STRATA_ASSIGN_OR_RETURN(RegularFile f, RegularFile::Open(path));
  if (f.size() > static_cast<int64_t>(INT32_MAX))
    return InvalidArgumentError(path, ": the file is ", f.size(), " bytes, over protobuf's 2 GB limit for ", what,
                                what == "a model" ? "; store the weights as external data" : "");
  std::string bytes(static_cast<size_t>(f.size()), '\0');
  STRATA_RETURN_IF_ERROR(f.ReadAt(0, bytes.size(), bytes.data()));
  return bytes;
}

}  // namespace

StatusOr<Model> LoadModel(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadProtoFile(path, "a model"));
  return ParseModel(bytes, Dirname(path), path);
}

StatusOr<Tensor> ParseTensorProto(std::string_view bytes, std::string_view where) {
  ::onnx::TensorProto tp;
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return InvalidArgumentError(where, ": a serialised onnx.TensorProto is at most 2 GB, got ", bytes.size(), " bytes");
  if (!tp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return InvalidArgumentError(where, ": not a valid onnx.TensorProto");
  return TensorFromProto(tp, "", where);
}

StatusOr<Tensor> ReadTensorProtoFile(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadProtoFile(path, "a tensor"));
  return ParseTensorProto(bytes, path);
}

Status CheckModel(std::string_view bytes) {
  ::onnx::ModelProto mp;
  if (!mp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return InvalidArgumentError("not a valid ONNX ModelProto");
  try {
    ::onnx::checker::check_model(mp);
  } catch (const std::exception& e) {
    return InvalidArgumentError("onnx checker: ", e.what());
  }
  return Status::OK();
}

}  // namespace strata::onnx
