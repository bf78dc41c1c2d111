// .tflite -> strata IR (see tflite.h). The flatbuffers Verifier checks every offset and vector size against the
// file before any accessor runs; indices between tables (tensor, buffer and operator-code indices) are checked here.
// TFLite's NHWC ops become ONNX's NCHW ops between Transposes (the graph optimiser's channels-last regions remove the
// pairs between convolutions).
#include <algorithm>
#include <cstring>
#include <set>

#include "core/file_util.h"
#include "flatbuffers/flatbuffers.h"
#include "flatbuffers/flexbuffers.h"
#include "tensorflow/core/protobuf/meta_graph.pb.h"
#include "tf/tflite.h"
#include "tflite_schema_generated.h"

namespace strata::tf {

namespace fb = ::strata::tflite::fb;

std::string TfliteOpName(int code) {
  if (code >= static_cast<int>(fb::BuiltinOperator::MIN) && code <= static_cast<int>(fb::BuiltinOperator::MAX)) {
    const char* name = fb::EnumNameBuiltinOperator(static_cast<fb::BuiltinOperator>(code));
    if (name != nullptr && *name != '\0') return name;
  }
  return StrCat("builtin operator ", code);
}

namespace {

constexpr int64_t kOpset = 17;
constexpr size_t kMaxBytes = size_t{2} << 30;  // flatbuffers' 2 GiB limit; bigger models keep buffers outside

StatusOr<DType> TensorDType(fb::TensorType t, std::string_view what) {
  switch (t) {
    case fb::TensorType::FLOAT32:
      return DType::kFloat32;
    case fb::TensorType::INT32:
      return DType::kInt32;
    case fb::TensorType::INT64:
      return DType::kInt64;
    case fb::TensorType::INT8:
      return DType::kInt8;
    case fb::TensorType::UINT8:
      return DType::kUInt8;
    case fb::TensorType::BOOL:
      return DType::kBool;
    case fb::TensorType::INT16:
      return DType::kInt16;
    case fb::TensorType::FLOAT16:
      return DType::kFloat16;
    case fb::TensorType::FLOAT64:
      return DType::kFloat64;
    default:
      break;
  }
  return UnimplementedError(what, " has TFLite tensor type ", static_cast<int>(t),
                            ", which the reader does not support");
}

class Importer {
 public:
  Importer(const fb::Model* model, std::string where) : m_(model), where_(std::move(where)) {}
  StatusOr<graph::Model> Run();

 private:
  std::string TensorWhat(int index) const { return StrCat(where_, ": tensor ", index); }
  StatusOr<const fb::Tensor*> GetTensor(int index, const std::string& what) const;
  StatusOr<Tensor> ConstantOf(int index) const;  // undefined Tensor when the tensor has no data
  Status ConvertOp(int op_index, const fb::Operator* op);
  // TF Serving's older convention (the with_sigdef test model): SignatureDef protos in the "signature_defs_metadata"
  // metadata buffer, a FlexBuffer map from signature key to serialized tensorflow.SignatureDef. Fills `alias` (tensor
  // index -> signature alias) from serving_default (or the only signature) when there is one.
  Status MetadataSignature(std::map<int, std::string>* alias) const;

  // Value names and helpers for emitting nodes.
  std::string Value(int tensor) const { return names_[tensor]; }
  std::string Fresh(const std::string& base) {
    std::string n = base;
    for (int i = 1; used_.count(n) != 0; ++i) n = StrCat(base, "_", i);
    used_.insert(n);
    return n;
  }
  void Emit(std::string op, std::vector<std::string> in, std::vector<std::string> out, graph::AttributeMap attrs = {}) {
    graph::Node n;
    n.name = Fresh(out.empty() ? op : out[0] + "/" + op);
    n.op_type = std::move(op);
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    n.attrs = std::move(attrs);
    n.opset = static_cast<int>(kOpset);
    g_->nodes.push_back(std::move(n));
  }
  std::string AddConstant(const std::string& base, Tensor t) {
    const std::string name = Fresh(base);
    g_->initializers[name] = std::move(t);
    return name;
  }
  // Writes `pre` (the op's raw result) through the fused activation into `out`.
  Status Activation(fb::ActivationFunctionType act, const std::string& pre, const std::string& out,
                    const std::string& op_what);
  // The value computed into tensor `out` with a fused activation: the op writes Pre(out), Activation copies it on.
  std::string Pre(int out, fb::ActivationFunctionType act) {
    return act == fb::ActivationFunctionType::NONE ? Value(out) : Fresh(Value(out) + "/pre_activation");
  }
  std::string ToNchw(const std::string& v) {
    const std::string o = Fresh(v + "/nchw");
    Emit("Transpose", {v}, {o}, {{"perm", graph::Attribute::Ints({0, 3, 1, 2})}});
    return o;
  }
  void ToNhwc(const std::string& v, const std::string& out) {
    Emit("Transpose", {v}, {out}, {{"perm", graph::Attribute::Ints({0, 2, 3, 1})}});
  }

  const fb::Model* m_;
  std::string where_;
  const fb::SubGraph* sg_ = nullptr;
  graph::Graph* g_ = nullptr;
  std::vector<std::string> names_;
  std::set<std::string> used_;
};

StatusOr<const fb::Tensor*> Importer::GetTensor(int index, const std::string& what) const {
  if (index < 0 || sg_->tensors() == nullptr || index >= static_cast<int>(sg_->tensors()->size()))
    return InvalidArgumentError(where_, ": ", what, " refers to tensor ", index, ", but the subgraph has ",
                                sg_->tensors() == nullptr ? 0 : sg_->tensors()->size(), " tensors");
  return sg_->tensors()->Get(static_cast<flatbuffers::uoffset_t>(index));
}

StatusOr<Tensor> Importer::ConstantOf(int index) const {
  const fb::Tensor* t = sg_->tensors()->Get(static_cast<flatbuffers::uoffset_t>(index));
  if (t->buffer() == 0) return Tensor();
  const auto* buffers = m_->buffers();
  if (buffers == nullptr || t->buffer() >= buffers->size())
    return InvalidArgumentError(TensorWhat(index), " ('", t->name() ? t->name()->str() : "", "') refers to buffer ",
                                t->buffer(), ", but the model has ", buffers == nullptr ? 0 : buffers->size(),
                                " buffers");
  const fb::Buffer* b = buffers->Get(t->buffer());
  if (b->offset() > 1)
    return UnimplementedError(TensorWhat(index),
                              " keeps its data outside the flatbuffer (a model over 2 GB); the "
                              "reader reads data inside the flatbuffer only");
  if (b->data() == nullptr || b->data()->size() == 0) return Tensor();
  STRATA_ASSIGN_OR_RETURN(DType dtype, TensorDType(t->type(), TensorWhat(index)));
  std::vector<int64_t> dims;
  uint64_t elements = 1;
  bool overflow = false;
  if (t->shape() != nullptr)
    for (int32_t d : *t->shape()) {
      if (d < 0) return InvalidArgumentError(TensorWhat(index), " is a constant with a negative dimension ", d);
      dims.push_back(d);
      overflow |= __builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements);
    }
  if (overflow || elements > b->data()->size())
    return InvalidArgumentError(TensorWhat(index), " ('", t->name() ? t->name()->str() : "", "') declares shape [",
                                StrJoin(dims, ","), "], more elements than its buffer's ", b->data()->size(),
                                " bytes hold");
  Shape shape(dims);
  const size_t want = static_cast<size_t>(elements) * DTypeSize(dtype);
  if (b->data()->size() != want)
    return InvalidArgumentError(TensorWhat(index), " ('", t->name() ? t->name()->str() : "", "') is ", DTypeName(dtype),
                                shape.ToString(), " (", want, " bytes), but its buffer holds ", b->data()->size(),
                                " bytes");
  Tensor out = Tensor::Empty(dtype, shape);
  if (want > 0) std::memcpy(out.raw_data(), b->data()->data(), want);
  return out;
}

Status Importer::Activation(fb::ActivationFunctionType act, const std::string& pre, const std::string& out,
                            const std::string& op_what) {
  switch (act) {
    case fb::ActivationFunctionType::NONE:
      return Status::OK();
    case fb::ActivationFunctionType::RELU:
      Emit("Relu", {pre}, {out});
      return Status::OK();
    case fb::ActivationFunctionType::RELU6:
    case fb::ActivationFunctionType::RELU_N1_TO_1: {
      const float lo = act == fb::ActivationFunctionType::RELU6 ? 0.0f : -1.0f;
      const float hi = act == fb::ActivationFunctionType::RELU6 ? 6.0f : 1.0f;
      Emit("Clip", {pre, AddConstant(out + "/min", Tensor::Scalar(lo)), AddConstant(out + "/max", Tensor::Scalar(hi))},
           {out});
      return Status::OK();
    }
    case fb::ActivationFunctionType::TANH:
      Emit("Tanh", {pre}, {out});
      return Status::OK();
    default:
      break;
  }
  return UnimplementedError(op_what, ": fused activation ", static_cast<int>(act), " is not supported");
}

template <typename Options>
StatusOr<const Options*> RequireOptions(const Options* o, const std::string& what) {
  if (o == nullptr) return InvalidArgumentError(what, ": its builtin options are missing or of another type");
  return o;
}

Status Importer::ConvertOp(int op_index, const fb::Operator* op) {
  const auto* codes = m_->operator_codes();
  if (codes == nullptr || op->opcode_index() >= codes->size())
    return InvalidArgumentError(where_, ": operator ", op_index, " has opcode_index ", op->opcode_index(),
                                ", but the model has ", codes == nullptr ? 0 : codes->size(), " operator codes");
  const fb::OperatorCode* oc = codes->Get(op->opcode_index());
  // TFLite: the larger of the two code fields is the operator (the byte field predates codes above 127).
  const int code = std::max<int>(oc->deprecated_builtin_code(), static_cast<int>(oc->builtin_code()));
  const std::string what = StrCat(where_, ": operator ", op_index, " (", TfliteOpName(code), ")");
  if (code == static_cast<int>(32) || oc->custom_code() != nullptr)
    return UnimplementedError(where_, ": operator ", op_index, " is the custom operator '",
                              oc->custom_code() ? oc->custom_code()->str() : "", "', which strata cannot run");
  std::vector<int> in, out;
  if (op->inputs() != nullptr) in.assign(op->inputs()->begin(), op->inputs()->end());
  if (op->outputs() != nullptr) out.assign(op->outputs()->begin(), op->outputs()->end());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != -1) STRATA_RETURN_IF_ERROR(GetTensor(in[i], StrCat("operator ", op_index, " input ", i)).status());
  for (size_t i = 0; i < out.size(); ++i)
    STRATA_RETURN_IF_ERROR(GetTensor(out[i], StrCat("operator ", op_index, " output ", i)).status());
  auto need = [&](size_t n_in, size_t n_out) -> Status {
    if (in.size() < n_in || out.size() != n_out ||
        std::any_of(in.begin(), in.begin() + n_in, [](int i) { return i < 0; }))
      return InvalidArgumentError(what, ": expected ", n_in, " inputs and ", n_out, " outputs, found ", in.size(),
                                  " and ", out.size());
    return Status::OK();
  };
  auto constant = [&](int tensor, const std::string& role) -> StatusOr<Tensor> {
    STRATA_ASSIGN_OR_RETURN(Tensor t, ConstantOf(tensor));
    if (!t.defined()) return UnimplementedError(what, ": its ", role, " (tensor ", tensor, ") is not a constant");
    return t;
  };
  using Op = fb::BuiltinOperator;
  const Op kind = static_cast<Op>(code);
  switch (kind) {
    case Op::ADD:
    case Op::SUB:
    case Op::MUL: {
      STRATA_RETURN_IF_ERROR(need(2, 1));
      fb::ActivationFunctionType act = fb::ActivationFunctionType::NONE;
      if (kind == Op::ADD && op->builtin_options_as_AddOptions())
        act = op->builtin_options_as_AddOptions()->fused_activation_function();
      if (kind == Op::SUB && op->builtin_options_as_SubOptions())
        act = op->builtin_options_as_SubOptions()->fused_activation_function();
      if (kind == Op::MUL && op->builtin_options_as_MulOptions())
        act = op->builtin_options_as_MulOptions()->fused_activation_function();
      const std::string pre = Pre(out[0], act);
      Emit(kind == Op::ADD ? "Add" : kind == Op::SUB ? "Sub" : "Mul", {Value(in[0]), Value(in[1])}, {pre});
      return Activation(act, pre, Value(out[0]), what);
    }
    case Op::RELU:
    case Op::RELU6:
    case Op::LOGISTIC:
    case Op::TANH: {
      STRATA_RETURN_IF_ERROR(need(1, 1));
      if (kind == Op::RELU6) return Activation(fb::ActivationFunctionType::RELU6, Value(in[0]), Value(out[0]), what);
      Emit(kind == Op::RELU ? "Relu" : kind == Op::LOGISTIC ? "Sigmoid" : "Tanh", {Value(in[0])}, {Value(out[0])});
      return Status::OK();
    }
    case Op::CONV_2D:
    case Op::DEPTHWISE_CONV_2D: {
      STRATA_RETURN_IF_ERROR(need(2, 1));
      STRATA_ASSIGN_OR_RETURN(Tensor w, constant(in[1], "filter"));
      if (w.dtype() != DType::kFloat32 || w.rank() != 4)
        return UnimplementedError(what, ": the filter is ", w.TypeString(), "; the reader needs float32 [O,H,W,I]");
      const bool dw = kind == Op::DEPTHWISE_CONV_2D;
      fb::Padding padding;
      int sh, sw, dh, dwf;
      fb::ActivationFunctionType act;
      int64_t group = 1;
      const int64_t kh = w.dim(1), kw = w.dim(2);
      Tensor oihw;
      if (!dw) {
        STRATA_ASSIGN_OR_RETURN(const fb::Conv2DOptions* o,
                                RequireOptions(op->builtin_options_as_Conv2DOptions(), what));
        padding = o->padding(), sh = o->stride_h(), sw = o->stride_w(), dh = o->dilation_h_factor(),
        dwf = o->dilation_w_factor(), act = o->fused_activation_function();
        const int64_t O = w.dim(0), I = w.dim(3);
        oihw = Tensor::Empty(DType::kFloat32, Shape{O, I, kh, kw});
        const float* s = w.data<float>();
        float* d = oihw.data<float>();
        for (int64_t o2 = 0; o2 < O; ++o2)
          for (int64_t y = 0; y < kh; ++y)
            for (int64_t x = 0; x < kw; ++x)
              for (int64_t i = 0; i < I; ++i) d[((o2 * I + i) * kh + y) * kw + x] = s[((o2 * kh + y) * kw + x) * I + i];
      } else {
        STRATA_ASSIGN_OR_RETURN(const fb::DepthwiseConv2DOptions* o,
                                RequireOptions(op->builtin_options_as_DepthwiseConv2DOptions(), what));
        padding = o->padding(), sh = o->stride_h(), sw = o->stride_w(), dh = o->dilation_h_factor(),
        dwf = o->dilation_w_factor(), act = o->fused_activation_function();
        const int64_t O = w.dim(3);
        if (w.dim(0) != 1)
          return InvalidArgumentError(what, ": a depthwise filter is [1,H,W,O], found ", w.shape().ToString());
        // Input channels: from the input tensor's shape, else O / depth_multiplier.
        const fb::Tensor* x = sg_->tensors()->Get(static_cast<flatbuffers::uoffset_t>(in[0]));
        int64_t cin = 0;
        if (x->shape() != nullptr && x->shape()->size() == 4) cin = x->shape()->Get(3);
        if (cin <= 0 && o->depth_multiplier() > 0) cin = O / o->depth_multiplier();
        if (cin <= 0 || O % cin != 0)
          return InvalidArgumentError(what, ": cannot tell the input channels (filter has ", O, " outputs)");
        group = cin;
        oihw = Tensor::Empty(DType::kFloat32, Shape{O, 1, kh, kw});
        const float* s = w.data<float>();
        float* d = oihw.data<float>();
        for (int64_t o2 = 0; o2 < O; ++o2)
          for (int64_t y = 0; y < kh; ++y)
            for (int64_t x2 = 0; x2 < kw; ++x2) d[(o2 * kh + y) * kw + x2] = s[(y * kw + x2) * O + o2];
      }
      if (sh <= 0 || sw <= 0 || dh <= 0 || dwf <= 0)
        return InvalidArgumentError(what, ": strides and dilations must be positive, found strides ", sh, ",", sw,
                                    " dilations ", dh, ",", dwf);
      std::vector<std::string> conv_in = {ToNchw(Value(in[0])), AddConstant(Value(in[1]) + "/oihw", std::move(oihw))};
      if (in.size() > 2 && in[2] >= 0) {
        STRATA_ASSIGN_OR_RETURN(Tensor b, constant(in[2], "bias"));
        conv_in.push_back(AddConstant(Value(in[2]), std::move(b)));
      }
      const std::string y = Fresh(Value(out[0]) + "/nchw");
      Emit("Conv", conv_in, {y},
           {{"auto_pad", graph::Attribute::String(padding == fb::Padding::SAME ? "SAME_UPPER" : "VALID")},
            {"strides", graph::Attribute::Ints({sh, sw})},
            {"dilations", graph::Attribute::Ints({dh, dwf})},
            {"kernel_shape", graph::Attribute::Ints({kh, kw})},
            {"group", graph::Attribute::Int(group)}});
      const std::string pre = Pre(out[0], act);
      ToNhwc(y, pre);
      return Activation(act, pre, Value(out[0]), what);
    }
    case Op::MAX_POOL_2D:
    case Op::AVERAGE_POOL_2D: {
      STRATA_RETURN_IF_ERROR(need(1, 1));
      STRATA_ASSIGN_OR_RETURN(const fb::Pool2DOptions* o, RequireOptions(op->builtin_options_as_Pool2DOptions(), what));
      if (o->stride_h() <= 0 || o->stride_w() <= 0 || o->filter_height() <= 0 || o->filter_width() <= 0)
        return InvalidArgumentError(what, ": filter and strides must be positive");
      const std::string y = Fresh(Value(out[0]) + "/nchw");
      graph::AttributeMap attrs = {
          {"auto_pad", graph::Attribute::String(o->padding() == fb::Padding::SAME ? "SAME_UPPER" : "VALID")},
          {"strides", graph::Attribute::Ints({o->stride_h(), o->stride_w()})},
          {"kernel_shape", graph::Attribute::Ints({o->filter_height(), o->filter_width()})}};
      if (kind == Op::AVERAGE_POOL_2D) attrs["count_include_pad"] = graph::Attribute::Int(0);
      Emit(kind == Op::MAX_POOL_2D ? "MaxPool" : "AveragePool", {ToNchw(Value(in[0]))}, {y}, attrs);
      const fb::ActivationFunctionType act = o->fused_activation_function();
      const std::string pre = Pre(out[0], act);
      ToNhwc(y, pre);
      return Activation(act, pre, Value(out[0]), what);
    }
    case Op::FULLY_CONNECTED: {
      STRATA_RETURN_IF_ERROR(need(2, 1));
      const fb::FullyConnectedOptions* o = op->builtin_options_as_FullyConnectedOptions();
      if (o != nullptr && (o->keep_num_dims() || o->weights_format() != 0))
        return UnimplementedError(what, ": keep_num_dims or a shuffled weights format is not supported");
      STRATA_ASSIGN_OR_RETURN(Tensor w, constant(in[1], "weights"));
      if (w.dtype() != DType::kFloat32 || w.rank() != 2)
        return UnimplementedError(what, ": the weights are ", w.TypeString(), "; the reader needs float32 [units, k]");
      const std::string flat = Fresh(Value(in[0]) + "/flat");
      Emit("Reshape", {Value(in[0]), AddConstant(flat + "/shape", Tensor::FromVector<int64_t>({-1, w.dim(1)}))},
           {flat});
      std::vector<std::string> gemm_in = {flat, AddConstant(Value(in[1]), std::move(w))};
      if (in.size() > 2 && in[2] >= 0) {
        STRATA_ASSIGN_OR_RETURN(Tensor b, constant(in[2], "bias"));
        gemm_in.push_back(AddConstant(Value(in[2]), std::move(b)));
      }
      const fb::ActivationFunctionType act = o ? o->fused_activation_function() : fb::ActivationFunctionType::NONE;
      const std::string pre = Pre(out[0], act);
      Emit("Gemm", gemm_in, {pre}, {{"transB", graph::Attribute::Int(1)}});
      return Activation(act, pre, Value(out[0]), what);
    }
    case Op::RESHAPE: {
      STRATA_RETURN_IF_ERROR(need(1, 1));
      std::vector<int64_t> shape;
      bool have = false;
      if (in.size() > 1 && in[1] >= 0) {
        STRATA_ASSIGN_OR_RETURN(Tensor s, ConstantOf(in[1]));
        if (!s.defined()) {
          const std::string cast = Fresh(Value(in[1]) + "/int64");
          Emit("Cast", {Value(in[1])}, {cast}, {{"to", graph::Attribute::Int(static_cast<int64_t>(7))}});
          Emit("Reshape", {Value(in[0]), cast}, {Value(out[0])});
          return Status::OK();
        }
        if (s.dtype() != DType::kInt32 || s.rank() > 1)
          return InvalidArgumentError(what, ": the shape is ", s.TypeString(), ", expected int32 [rank]");
        for (int32_t d : s.values<int32_t>()) shape.push_back(d);
        have = true;
      }
      const fb::ReshapeOptions* o = op->builtin_options_as_ReshapeOptions();
      if (!have && o != nullptr && o->new_shape() != nullptr) {
        for (int32_t d : *o->new_shape()) shape.push_back(d);
        have = true;
      }
      if (!have) return InvalidArgumentError(what, ": no new shape (neither a shape input nor new_shape)");
      Emit("Reshape", {Value(in[0]), AddConstant(Value(out[0]) + "/shape", Tensor::FromVector(shape))},
           {Value(out[0])});
      return Status::OK();
    }
    case Op::SOFTMAX: {
      STRATA_RETURN_IF_ERROR(need(1, 1));
      const fb::SoftmaxOptions* o = op->builtin_options_as_SoftmaxOptions();
      std::string x = Value(in[0]);
      if (o != nullptr && o->beta() != 1.0f) {
        const std::string scaled = Fresh(x + "/beta");
        Emit("Mul", {x, AddConstant(scaled + "/value", Tensor::Scalar(o->beta()))}, {scaled});
        x = scaled;
      }
      Emit("Softmax", {x}, {Value(out[0])}, {{"axis", graph::Attribute::Int(-1)}});
      return Status::OK();
    }
    case Op::MEAN: {
      STRATA_RETURN_IF_ERROR(need(2, 1));
      STRATA_ASSIGN_OR_RETURN(Tensor axes, constant(in[1], "axes"));
      if (axes.dtype() != DType::kInt32) return InvalidArgumentError(what, ": axes are ", axes.TypeString());
      std::vector<int64_t> a;
      for (int32_t v : axes.values<int32_t>()) a.push_back(v);
      const fb::ReducerOptions* o = op->builtin_options_as_ReducerOptions();
      Emit("ReduceMean", {Value(in[0])}, {Value(out[0])},
           {{"axes", graph::Attribute::Ints(a)}, {"keepdims", graph::Attribute::Int(o && o->keep_dims() ? 1 : 0)}});
      return Status::OK();
    }
    case Op::PAD: {
      STRATA_RETURN_IF_ERROR(need(2, 1));
      STRATA_ASSIGN_OR_RETURN(Tensor p, constant(in[1], "paddings"));
      if (p.dtype() != DType::kInt32 || p.rank() != 2 || p.dim(1) != 2)
        return InvalidArgumentError(what, ": paddings are ", p.TypeString(), ", expected int32 [rank, 2]");
      const int64_t r = p.dim(0);
      std::vector<int64_t> pads(static_cast<size_t>(2 * r));
      for (int64_t i = 0; i < r; ++i) {
        pads[i] = p.values<int32_t>()[2 * i];
        pads[r + i] = p.values<int32_t>()[2 * i + 1];
      }
      Emit("Pad", {Value(in[0]), AddConstant(Value(out[0]) + "/pads", Tensor::FromVector(pads))}, {Value(out[0])});
      return Status::OK();
    }
    case Op::CONCATENATION: {
      if (in.empty() || out.size() != 1) return need(1, 1);
      STRATA_ASSIGN_OR_RETURN(const fb::ConcatenationOptions* o,
                              RequireOptions(op->builtin_options_as_ConcatenationOptions(), what));
      std::vector<std::string> vals;
      for (int i : in) vals.push_back(Value(i));
      const fb::ActivationFunctionType act = o->fused_activation_function();
      const std::string pre = Pre(out[0], act);
      Emit("Concat", vals, {pre}, {{"axis", graph::Attribute::Int(o->axis())}});
      return Activation(act, pre, Value(out[0]), what);
    }
    case Op::QUANTIZE:
    case Op::DEQUANTIZE:
      return UnimplementedError(what,
                                ": quantized .tflite models are not supported by the reader (it reads "
                                "float32 models; serve the float32 export, or the int8 ONNX model of strata quantize)");
    default:
      break;
  }
  return UnimplementedError(what,
                            " has no strata mapping; the reader maps ADD, SUB, MUL, RELU, RELU6, LOGISTIC, "
                            "TANH, CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D, AVERAGE_POOL_2D, FULLY_CONNECTED, RESHAPE, "
                            "SOFTMAX, MEAN, PAD and CONCATENATION");
}

Status Importer::MetadataSignature(std::map<int, std::string>* alias) const {
  if (m_->metadata() == nullptr) return Status::OK();
  for (const fb::Metadata* md : *m_->metadata()) {
    if (md->name() == nullptr || md->name()->str() != "signature_defs_metadata") continue;
    const std::string what = StrCat(where_, ": metadata 'signature_defs_metadata'");
    if (m_->buffers() == nullptr || md->buffer() >= m_->buffers()->size())
      return InvalidArgumentError(what, " refers to buffer ", md->buffer(), ", but the model has ",
                                  m_->buffers() == nullptr ? 0 : m_->buffers()->size(), " buffers");
    const auto* data = m_->buffers()->Get(md->buffer())->data();
    if (data == nullptr || !flexbuffers::VerifyBuffer(data->data(), data->size()))
      return InvalidArgumentError(what, " is not a valid FlexBuffer");
    const flexbuffers::Reference root = flexbuffers::GetRoot(data->data(), data->size());
    if (!root.IsMap()) return InvalidArgumentError(what, " is not a FlexBuffer map of signature keys");
    const flexbuffers::Map map = root.AsMap();
    const flexbuffers::TypedVector keys = map.Keys();
    int pick = -1;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i].AsKey() == std::string_view("serving_default")) pick = static_cast<int>(i);
    if (pick < 0 && keys.size() == 1) pick = 0;
    if (pick < 0) return Status::OK();
    const flexbuffers::Reference value = map.Values()[static_cast<size_t>(pick)];
    // The serialized proto is stored as a FlexBuffer string (TF's writer) or blob.
    std::string_view proto;
    if (value.IsString()) {
      const flexbuffers::String str = value.AsString();
      proto = std::string_view(str.c_str(), str.size());
    } else if (value.IsBlob()) {
      const flexbuffers::Blob blob = value.AsBlob();
      proto = std::string_view(reinterpret_cast<const char*>(blob.data()), blob.size());
    } else {
      return InvalidArgumentError(what, ": signature '", keys[pick].AsKey(), "' is neither a string nor a blob");
    }
    tensorflow::SignatureDef def;
    if (!def.ParseFromArray(proto.data(), static_cast<int>(proto.size())))
      return InvalidArgumentError(what, ": signature '", keys[pick].AsKey(), "' is not a SignatureDef proto");
    // TensorInfo names are TF tensor names ("tflite_input:0"); the TFLite tensor carries the op name.
    auto bind = [&](const google::protobuf::Map<std::string, tensorflow::TensorInfo>& m) -> Status {
      for (const auto& [name, info] : m) {
        std::string tensor = info.name();
        if (const size_t colon = tensor.rfind(':'); colon != std::string::npos) tensor.resize(colon);
        int found = -1;
        for (size_t i = 0; sg_->tensors() != nullptr && i < sg_->tensors()->size(); ++i) {
          const fb::Tensor* t = sg_->tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
          if (t->name() != nullptr && t->name()->str() == tensor) found = static_cast<int>(i);
        }
        if (found < 0)
          return InvalidArgumentError(what, ": signature alias '", name, "' names tensor '", info.name(),
                                      "', which the subgraph does not have");
        (*alias)[found] = name;
      }
      return Status::OK();
    };
    STRATA_RETURN_IF_ERROR(bind(def.inputs()));
    return bind(def.outputs());
  }
  return Status::OK();
}

StatusOr<graph::Model> Importer::Run() {
  if (m_->subgraphs() == nullptr || m_->subgraphs()->size() == 0)
    return InvalidArgumentError(where_, ": the model has no subgraph");
  // The signature (the first SignatureDef, if any) picks the subgraph and names the inputs and outputs.
  const fb::SignatureDef* sig = nullptr;
  if (m_->signature_defs() != nullptr && m_->signature_defs()->size() > 0) sig = m_->signature_defs()->Get(0);
  const uint32_t sg_index = sig != nullptr ? sig->subgraph_index() : 0;
  if (sg_index >= m_->subgraphs()->size())
    return InvalidArgumentError(where_, ": the signature refers to subgraph ", sg_index, ", but the model has ",
                                m_->subgraphs()->size());
  sg_ = m_->subgraphs()->Get(sg_index);
  const size_t n_tensors = sg_->tensors() == nullptr ? 0 : sg_->tensors()->size();
  graph::Model model;
  model.opset_imports[""] = kOpset;
  model.producer_name = "strata tflite import";
  g_ = &model.graph;
  g_->name = sg_->name() != nullptr ? sg_->name()->str() : "main";

  // Names: signature aliases for the signature's tensors, else the tensor names (made unique; "tensor_N" if empty).
  std::map<int, std::string> alias;
  auto read_map = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::TensorMap>>* v) -> Status {
    if (v == nullptr) return Status::OK();
    for (const fb::TensorMap* tm : *v) {
      if (tm->tensor_index() >= n_tensors)
        return InvalidArgumentError(where_, ": the signature refers to tensor ", tm->tensor_index(),
                                    ", but the subgraph has ", n_tensors);
      if (tm->name() != nullptr && tm->name()->size() > 0)
        alias[static_cast<int>(tm->tensor_index())] = tm->name()->str();
    }
    return Status::OK();
  };
  if (sig != nullptr) {
    STRATA_RETURN_IF_ERROR(read_map(sig->inputs()));
    STRATA_RETURN_IF_ERROR(read_map(sig->outputs()));
  } else {
    STRATA_RETURN_IF_ERROR(MetadataSignature(&alias));
  }
  for (const auto& [i, n] : alias) {
    if (used_.count(n) != 0) return InvalidArgumentError(where_, ": the signature names two tensors '", n, "'");
    used_.insert(n);
  }
  names_.resize(n_tensors);
  for (size_t i = 0; i < n_tensors; ++i) {
    auto it = alias.find(static_cast<int>(i));
    if (it != alias.end()) {
      names_[i] = it->second;
      continue;
    }
    const fb::Tensor* t = sg_->tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
    names_[i] = Fresh(t->name() != nullptr && t->name()->size() > 0 ? t->name()->str() : StrCat("tensor_", i));
  }

  // Quantized activations are not supported: say so up front rather than computing in the wrong type.
  for (size_t i = 0; i < n_tensors; ++i) {
    const fb::Tensor* t = sg_->tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if ((t->type() == fb::TensorType::INT8 || t->type() == fb::TensorType::UINT8) && t->buffer() == 0)
      return UnimplementedError(where_, ": tensor ", i, " ('", names_[i], "') is a quantized ",
                                t->type() == fb::TensorType::INT8 ? "int8" : "uint8",
                                " activation; the reader reads float32 .tflite models only");
  }

  // Constants used by ops as plain operands (e.g. ADD's b) become initializers under their value names; the
  // op converters add reformatted copies (filters) themselves.
  std::set<int> inputs_set;
  if (sg_->inputs() != nullptr)
    for (int i : *sg_->inputs()) {
      STRATA_RETURN_IF_ERROR(GetTensor(i, "the subgraph's input list").status());
      inputs_set.insert(i);
    }
  for (size_t i = 0; i < n_tensors; ++i) {
    STRATA_ASSIGN_OR_RETURN(Tensor c, ConstantOf(static_cast<int>(i)));
    if (c.defined() && inputs_set.count(static_cast<int>(i)) == 0) g_->initializers[names_[i]] = std::move(c);
  }
  for (int i : inputs_set) {
    const fb::Tensor* t = sg_->tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
    graph::ValueInfo vi;
    vi.name = names_[i];
    STRATA_ASSIGN_OR_RETURN(vi.dtype, TensorDType(t->type(), TensorWhat(i)));
    // shape_signature (-1 = any size) when present; without one the converter fixed every dim, and TFLite's
    // runtime (TF Serving's TFLite sessions) resizes the input to each request's shape, so any shape is accepted.
    if (t->shape_signature() != nullptr && t->shape_signature()->size() > 0) {
      std::vector<Dim> dims;
      for (int32_t d : *t->shape_signature()) dims.push_back(d >= 0 ? Dim(d) : Dim());
      vi.shape = PartialShape::Of(dims);
    }
    g_->inputs.push_back(std::move(vi));
  }
  // Keep the subgraph's input order.
  if (sg_->inputs() != nullptr) {
    std::vector<graph::ValueInfo> ordered;
    for (int i : *sg_->inputs())
      for (const auto& vi : g_->inputs)
        if (vi.name == names_[i]) ordered.push_back(vi);
    g_->inputs = std::move(ordered);
  }

  if (sg_->operators() != nullptr) {
    int index = 0;
    for (const fb::Operator* op : *sg_->operators()) STRATA_RETURN_IF_ERROR(ConvertOp(index++, op));
  }
  // Outputs: the signature's order when there is one, else the subgraph's.
  std::vector<int> outs;
  if (sig != nullptr && sig->outputs() != nullptr) {
    for (const fb::TensorMap* tm : *sig->outputs()) outs.push_back(static_cast<int>(tm->tensor_index()));
  } else if (sg_->outputs() != nullptr) {
    for (int i : *sg_->outputs()) {
      STRATA_RETURN_IF_ERROR(GetTensor(i, "the subgraph's output list").status());
      outs.push_back(i);
    }
  }
  if (outs.empty()) return InvalidArgumentError(where_, ": the model has no outputs");
  for (int i : outs) {
    const fb::Tensor* t = sg_->tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
    graph::ValueInfo vi;
    vi.name = names_[i];
    STRATA_ASSIGN_OR_RETURN(vi.dtype, TensorDType(t->type(), TensorWhat(i)));
    g_->outputs.push_back(std::move(vi));
  }
  Status sorted = graph::TopologicalSort(g_);
  if (!sorted.ok()) return InvalidArgumentError(where_, ": ", sorted.message());
  Status verified = graph::VerifyGraph(*g_);
  if (!verified.ok()) return InvalidArgumentError(where_, ": ", verified.message());
  return model;
}

}  // namespace

StatusOr<graph::Model> ImportTflite(std::string_view bytes, std::string_view where) {
  const std::string w(where);
  if (bytes.size() < 8)
    return InvalidArgumentError(w, ": not a TFLite model: ", bytes.size(),
                                " bytes, shorter than a flatbuffer header (8 bytes)");
  if (!fb::ModelBufferHasIdentifier(bytes.data())) {
    std::string found;
    for (char c : bytes.substr(4, 4))
      found +=
          (c >= 32 && c < 127) ? std::string(1, c) : StrCat("\\x", static_cast<int>(static_cast<unsigned char>(c)));
    return InvalidArgumentError(w, ": not a TFLite model: expected the file identifier \"TFL3\" at bytes 4-7, found \"",
                                found, "\"");
  }
  if (bytes.size() >= kMaxBytes)
    return InvalidArgumentError(w, ": ", bytes.size(), " bytes, over flatbuffers' 2 GiB limit");
  const char* data = bytes.data();
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(data), bytes.size());
  if (!fb::VerifyModelBuffer(verifier))
    return InvalidArgumentError(w,
                                ": corrupt or truncated TFLite model: the flatbuffers verifier found an offset, "
                                "size or nesting that does not fit the file's ",
                                bytes.size(), " bytes");
  const fb::Model* model = fb::GetModel(data);
  return Importer(model, w).Run();
}

StatusOr<graph::Model> LoadTflite(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadRegularFile(path, static_cast<int64_t>(kMaxBytes)));
  return ImportTflite(bytes, path);
}

}  // namespace strata::tf
