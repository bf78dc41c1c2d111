// strata IR -> .tflite (see tflite.h). One pass over the prepared graph in topological order: every value maps to a
// TFLite tensor and a layout (kPlain, or kNchwAsNhwc: ONNX sees NCHW, the TFLite tensor holds NHWC), constant
// operands become buffers, and each node becomes zero (Identity, layout Transposes, fused activations) or more
// TFLite operators.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "flatbuffers/flatbuffers.h"
#include "graph/infer.h"
#include "graph/passes/passes.h"
#include "tf/tflite.h"
#include "tflite_schema_generated.h"

namespace strata::tf {
namespace {

namespace fb = ::strata::tflite::fb;
using Builder = flatbuffers::FlatBufferBuilder;
using OptionsFn = std::function<std::pair<fb::BuiltinOptions, flatbuffers::Offset<void>>(Builder&)>;

enum class Layout { kPlain, kNchwAsNhwc };

struct QuantParams {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int axis = 0;
};

struct TensorRec {
  std::string name;
  fb::TensorType type = fb::TensorType::FLOAT32;
  std::vector<int32_t> shape, signature;  // signature: -1 for dims not known at export time
  uint32_t buffer = 0;
  bool quantized = false;
  QuantParams q;
};

struct OpRec {
  fb::BuiltinOperator code;
  std::vector<int32_t> inputs, outputs;
  OptionsFn options;
};

struct Mapped {
  int tensor = -1;
  Layout layout = Layout::kPlain;
};

constexpr int kNhwcFromNchw[4] = {0, 2, 3, 1};  // NHWC dim i is NCHW dim kNhwcFromNchw[i]

// Asymmetric int8 parameters for the range [lo, hi] (widened to contain 0, as TFLite requires).
QuantParams ActivationParams(float lo, float hi) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  if (hi - lo < 1e-8f) hi = lo + 1e-8f;
  const double scale = (static_cast<double>(hi) - lo) / 255.0;
  const double zp = std::round(-128.0 - lo / scale);
  return {{static_cast<float>(scale)}, {static_cast<int64_t>(std::clamp(zp, -128.0, 127.0))}, 0};
}

float SymmetricScale(float max_abs) { return max_abs > 0 ? max_abs / 127.0f : 1.0f; }

int8_t QuantizeSymmetric(float v, float scale) {
  return static_cast<int8_t>(std::clamp<double>(std::nearbyint(v / scale), -127.0, 127.0));
}

class Exporter {
 public:
  Exporter(const graph::Model& model, const TfliteExportOptions& options) : m_(model), o_(options) {}

  StatusOr<std::string> Run();

 private:
  const graph::Graph& g() const { return m_.graph; }
  Status ConvertNode(size_t index);
  Status ConvertConv(const graph::Node& n, size_t index);
  Status ConvertPool(const graph::Node& n);
  Status ConvertDense(const graph::Node& n, size_t index);
  Status ConvertBinary(const graph::Node& n, size_t index);
  Status ConvertReshape(const graph::Node& n);
  Status ConvertUnary(const graph::Node& n, fb::BuiltinOperator code, OptionsFn options = nullptr);

  // The fused activation after node `index` whose output is `value`: a Relu (or Clip(0,6) / Relu6-style Clip) that
  // is the value's only reader, when the value is no graph output. Sets *result to the activation's output.
  fb::ActivationFunctionType FuseActivation(size_t index, const std::string& value, std::string* result);

  StatusOr<Mapped> Input(const graph::Node& n, int i) const;
  const Tensor* Constant(const std::string& name) const;
  StatusOr<PartialShape> ShapeOf(const std::string& value) const;

  // A new activation tensor for `value` in `layout`; int8 exports take its parameters from the calibrated range or
  // from `tied` (an op whose output must share its input's parameters).
  StatusOr<int> NewActivation(const std::string& value, Layout layout, const TensorRec* tied = nullptr,
                              const QuantParams* fixed = nullptr);
  int NewConstTensor(const std::string& name, fb::TensorType type, const std::vector<int32_t>& shape, std::string bytes,
                     const QuantParams* q = nullptr);
  // A float constant operand (e.g. Mul's scale): float32, or int8 symmetric per tensor.
  int FloatConstant(const std::string& name, const Tensor& t, const std::vector<int32_t>& shape);
  void AddOp(fb::BuiltinOperator code, std::vector<int32_t> in, std::vector<int32_t> out, OptionsFn options = nullptr);

  StatusOr<std::string> Serialize();

  graph::Model m_;
  TfliteExportOptions o_;
  graph::InferredGraph types_;
  std::map<std::string, int> readers_;
  std::set<std::string> graph_outputs_;
  std::set<size_t> fused_;  // nodes folded into an earlier operator
  std::map<std::string, Mapped> map_;
  std::vector<TensorRec> tensors_;
  std::vector<std::string> buffers_{std::string()};  // buffer 0: the empty sentinel
  std::vector<OpRec> ops_;
  std::vector<int32_t> inputs_, outputs_;
};

StatusOr<PartialShape> Exporter::ShapeOf(const std::string& value) const {
  auto it = types_.types.find(value);
  if (it == types_.types.end() || !it->second.shape.rank_known)
    return UnimplementedError("TFLite export: the shape of '", value, "' is unknown (TFLite tensors need a rank)");
  return it->second.shape;
}

const Tensor* Exporter::Constant(const std::string& name) const {
  auto it = g().initializers.find(name);
  return it == g().initializers.end() ? nullptr : &it->second;
}

StatusOr<Mapped> Exporter::Input(const graph::Node& n, int i) const {
  if (!n.has_input(i)) return InvalidArgumentError(n.Describe(), ": input ", i, " is missing");
  auto it = map_.find(n.inputs[i]);
  if (it == map_.end())
    return UnimplementedError("TFLite export: ", n.Describe(), " reads '", n.inputs[i],
                              "', which is neither a model input nor computed by an exported op");
  return it->second;
}

StatusOr<int> Exporter::NewActivation(const std::string& value, Layout layout, const TensorRec* tied,
                                      const QuantParams* fixed) {
  STRATA_ASSIGN_OR_RETURN(PartialShape s, ShapeOf(value));
  auto type_it = types_.types.find(value);
  if (type_it->second.dtype != DType::kFloat32)
    return UnimplementedError("TFLite export: '", value, "' is ", DTypeName(type_it->second.dtype),
                              "; the export handles float32 activations only");
  if (layout == Layout::kNchwAsNhwc && s.rank() != 4)
    return InternalError("TFLite export: channels-last value '", value, "' has rank ", s.rank());
  TensorRec t;
  t.name = value;
  for (int i = 0; i < s.rank(); ++i) {
    const Dim& d = s.dims[layout == Layout::kNchwAsNhwc ? kNhwcFromNchw[i] : i];
    t.shape.push_back(d.known() ? static_cast<int32_t>(d.value) : 1);
    t.signature.push_back(d.known() ? static_cast<int32_t>(d.value) : -1);
  }
  if (o_.int8) {
    t.type = fb::TensorType::INT8;
    t.quantized = true;
    if (fixed != nullptr) {
      t.q = *fixed;
    } else if (tied != nullptr) {
      t.q = tied->q;
    } else {
      auto r = o_.ranges.find(value);
      if (r == o_.ranges.end())
        return InvalidArgumentError("TFLite int8 export: no calibrated range for '", value, "'");
      t.q = ActivationParams(r->second.first, r->second.second);
    }
  }
  tensors_.push_back(std::move(t));
  const int index = static_cast<int>(tensors_.size()) - 1;
  map_[value] = {index, layout};
  return index;
}

int Exporter::NewConstTensor(const std::string& name, fb::TensorType type, const std::vector<int32_t>& shape,
                             std::string bytes, const QuantParams* q) {
  TensorRec t;
  t.name = name;
  t.type = type;
  t.shape = shape;
  t.signature = shape;
  buffers_.push_back(std::move(bytes));
  t.buffer = static_cast<uint32_t>(buffers_.size() - 1);
  if (q != nullptr) {
    t.quantized = true;
    t.q = *q;
  }
  tensors_.push_back(std::move(t));
  return static_cast<int>(tensors_.size()) - 1;
}

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

int Exporter::FloatConstant(const std::string& name, const Tensor& t, const std::vector<int32_t>& shape) {
  std::vector<float> v = t.ToVector<float>();
  if (!o_.int8) return NewConstTensor(name, fb::TensorType::FLOAT32, shape, Bytes(v));
  float max_abs = 0;
  for (float x : v) max_abs = std::max(max_abs, std::abs(x));
  QuantParams q{{SymmetricScale(max_abs)}, {0}, 0};
  std::vector<int8_t> qv(v.size());
  for (size_t i = 0; i < v.size(); ++i) qv[i] = QuantizeSymmetric(v[i], q.scale[0]);
  return NewConstTensor(name, fb::TensorType::INT8, shape, Bytes(qv), &q);
}

void Exporter::AddOp(fb::BuiltinOperator code, std::vector<int32_t> in, std::vector<int32_t> out, OptionsFn options) {
  ops_.push_back({code, std::move(in), std::move(out), std::move(options)});
}

fb::ActivationFunctionType Exporter::FuseActivation(size_t index, const std::string& value, std::string* result) {
  *result = value;
  if (graph_outputs_.count(value) != 0 || readers_[value] != 1) return fb::ActivationFunctionType::NONE;
  for (size_t j = index + 1; j < g().nodes.size(); ++j) {
    const graph::Node& r = g().nodes[j];
    if (std::find(r.inputs.begin(), r.inputs.end(), value) == r.inputs.end()) continue;
    if (r.op_type == "Relu") {
      fused_.insert(j);
      *result = r.outputs[0];
      return fb::ActivationFunctionType::RELU;
    }
    if (r.op_type == "Clip" && r.inputs.size() == 3) {
      const Tensor* lo = Constant(r.inputs[1]);
      const Tensor* hi = Constant(r.inputs[2]);
      if (lo != nullptr && hi != nullptr && lo->dtype() == DType::kFloat32 && hi->dtype() == DType::kFloat32 &&
          lo->num_elements() == 1 && hi->num_elements() == 1 && lo->values<float>()[0] == 0.0f &&
          hi->values<float>()[0] == 6.0f) {
        fused_.insert(j);
        *result = r.outputs[0];
        return fb::ActivationFunctionType::RELU6;
      }
    }
    break;
  }
  return fb::ActivationFunctionType::NONE;
}

// TFLite's padding for one spatial dim: VALID pads nothing; SAME pads total = max((ceil(in/s)-1)*s + k_eff - in, 0)
// with the smaller half first. Returns the (before, after) SAME would use.
std::pair<int64_t, int64_t> SamePads(int64_t in, int64_t k, int64_t stride, int64_t dilation) {
  const int64_t k_eff = (k - 1) * dilation + 1;
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + k_eff - in, 0);
  return {total / 2, total - total / 2};
}

struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: ONNX order [top, left, bottom, right]
};

// The ONNX padding of a Conv / pool node on input spatial dims (h, w), resolved to explicit pads.
StatusOr<Window> ResolveWindow(const graph::Node& n, const std::vector<int64_t>& kernel, int64_t h, int64_t w) {
  Window win;
  win.kernel = kernel;
  win.strides = n.GetInts("strides", {1, 1});
  win.dilations = n.GetInts("dilations", {1, 1});
  if (win.kernel.size() != 2 || win.strides.size() != 2 || win.dilations.size() != 2)
    return UnimplementedError("TFLite export: ", n.Describe(), " is not 2-D (TFLite's ops are 2-D)");
  const std::string auto_pad = n.GetString("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    win.pads = {0, 0, 0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (h < 0 || w < 0)
      return UnimplementedError("TFLite export: ", n.Describe(), ": SAME padding on unknown spatial dims");
    auto ph = SamePads(h, win.kernel[0], win.strides[0], win.dilations[0]);
    auto pw = SamePads(w, win.kernel[1], win.strides[1], win.dilations[1]);
    if (auto_pad == "SAME_LOWER") std::swap(ph.first, ph.second), std::swap(pw.first, pw.second);
    win.pads = {ph.first, pw.first, ph.second, pw.second};
  } else {
    win.pads = n.GetInts("pads", {0, 0, 0, 0});
    if (win.pads.size() != 4) return InvalidArgumentError(n.Describe(), ": pads must have 4 values");
  }
  return win;
}

// VALID when nothing is padded, SAME when the pads are TFLite's SAME pads, else nullopt (explicit padding).
std::optional<fb::Padding> TflitePadding(const Window& win, int64_t h, int64_t w) {
  if (std::all_of(win.pads.begin(), win.pads.end(), [](int64_t p) { return p == 0; })) return fb::Padding::VALID;
  if (h < 0 || w < 0) return std::nullopt;
  auto ph = SamePads(h, win.kernel[0], win.strides[0], win.dilations[0]);
  auto pw = SamePads(w, win.kernel[1], win.strides[1], win.dilations[1]);
  if (win.pads == std::vector<int64_t>{ph.first, pw.first, ph.second, pw.second}) return fb::Padding::SAME;
  return std::nullopt;
}

Status Exporter::ConvertConv(const graph::Node& n, size_t index) {
  STRATA_ASSIGN_OR_RETURN(Mapped x, Input(n, 0));
  if (x.layout != Layout::kNchwAsNhwc)
    return UnimplementedError("TFLite export: ", n.Describe(),
                              " reads an NCHW tensor that no NHWC->NCHW Transpose produced; the export maps "
                              "convolutions of channels-last (Keras-style) models");
  const Tensor* w = n.has_input(1) ? Constant(n.inputs[1]) : nullptr;
  if (w == nullptr || w->dtype() != DType::kFloat32 || w->rank() != 4)
    return UnimplementedError("TFLite export: ", n.Describe(), " needs a constant float32 4-D weight");
  const Tensor* b = n.has_input(2) ? Constant(n.inputs[2]) : nullptr;
  if (n.has_input(2) && (b == nullptr || b->dtype() != DType::kFloat32))
    return UnimplementedError("TFLite export: ", n.Describe(), " needs a constant float32 bias");
  const int64_t cout = w->dim(0), cin_g = w->dim(1), kh = w->dim(2), kw = w->dim(3);
  const int64_t group = n.GetInt("group", 1);
  STRATA_ASSIGN_OR_RETURN(PartialShape xs, ShapeOf(n.inputs[0]));
  const int64_t cin = xs.dims[1].known() ? xs.dims[1].value : cin_g * group;
  const int64_t h = xs.dims[2].known() ? xs.dims[2].value : -1, wd = xs.dims[3].known() ? xs.dims[3].value : -1;
  const bool depthwise = group > 1 && group == cin && cin_g == 1 && cout % group == 0;
  if (group != 1 && !depthwise)
    return UnimplementedError("TFLite export: ", n.Describe(), " is a grouped convolution (group ", group,
                              "); TFLite has CONV_2D (group 1) and DEPTHWISE_CONV_2D (group = input channels)");
  STRATA_ASSIGN_OR_RETURN(Window win, ResolveWindow(n, {kh, kw}, h, wd));
  int32_t x_tensor = x.tensor;
  std::optional<fb::Padding> padding = TflitePadding(win, h, wd);
  if (!padding) {
    // Explicit padding: a PAD op in front (zeros; in int8 the zero point, which is real 0), then VALID.
    std::vector<int32_t> pads = {0,
                                 0,
                                 static_cast<int32_t>(win.pads[0]),
                                 static_cast<int32_t>(win.pads[2]),
                                 static_cast<int32_t>(win.pads[1]),
                                 static_cast<int32_t>(win.pads[3]),
                                 0,
                                 0};
    const int pads_t = NewConstTensor(n.outputs[0] + "/paddings", fb::TensorType::INT32, {4, 2}, Bytes(pads));
    TensorRec padded = tensors_[x.tensor];
    padded.name = n.outputs[0] + "/padded";
    padded.buffer = 0;
    for (int d = 1; d <= 2; ++d) {
      const int32_t add = static_cast<int32_t>(win.pads[d - 1] + win.pads[d + 1]);
      padded.shape[d] += add;
      if (padded.signature[d] >= 0) padded.signature[d] += add;
    }
    tensors_.push_back(padded);
    const int32_t padded_t = static_cast<int32_t>(tensors_.size()) - 1;
    AddOp(fb::BuiltinOperator::PAD, {x_tensor, pads_t}, {padded_t},
          [](Builder& b) { return std::make_pair(fb::BuiltinOptions::PadOptions, fb::CreatePadOptions(b).Union()); });
    x_tensor = padded_t;
    padding = fb::Padding::VALID;
  }

  // Filter: CONV_2D [O, H, W, I]; DEPTHWISE_CONV_2D [1, H, W, O] (O = input channels x multiplier).
  const float* wv = w->data<float>();
  std::vector<float> filter(static_cast<size_t>(w->num_elements()));
  std::vector<int32_t> fshape;
  if (!depthwise) {
    fshape = {static_cast<int32_t>(cout), static_cast<int32_t>(kh), static_cast<int32_t>(kw),
              static_cast<int32_t>(cin_g)};
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t i = 0; i < cin_g; ++i)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t xk = 0; xk < kw; ++xk)
            filter[((o * kh + y) * kw + xk) * cin_g + i] = wv[((o * cin_g + i) * kh + y) * kw + xk];
  } else {
    fshape = {1, static_cast<int32_t>(kh), static_cast<int32_t>(kw), static_cast<int32_t>(cout)};
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t xk = 0; xk < kw; ++xk) filter[(y * kw + xk) * cout + o] = wv[(o * kh + y) * kw + xk];
  }
  std::vector<float> bias = b != nullptr ? b->ToVector<float>() : std::vector<float>(static_cast<size_t>(cout), 0.0f);
  if (static_cast<int64_t>(bias.size()) != cout)
    return InvalidArgumentError(n.Describe(), ": bias has ", bias.size(), " values for ", cout, " output channels");

  std::string out_value;
  const fb::ActivationFunctionType act = FuseActivation(index, n.outputs[0], &out_value);
  STRATA_ASSIGN_OR_RETURN(int out, NewActivation(out_value, Layout::kNchwAsNhwc));
  map_[n.outputs[0]] = map_[out_value];

  int filter_t, bias_t;
  const std::string wname = n.inputs[1], bname = n.has_input(2) ? n.inputs[2] : n.outputs[0] + "/bias";
  if (!o_.int8) {
    filter_t = NewConstTensor(wname, fb::TensorType::FLOAT32, fshape, Bytes(filter));
    bias_t = NewConstTensor(bname, fb::TensorType::FLOAT32, {static_cast<int32_t>(cout)}, Bytes(bias));
  } else {
    // Per output channel: the channel axis is 0 for CONV_2D's filter and 3 for DEPTHWISE_CONV_2D's.
    const int axis = depthwise ? 3 : 0;
    const size_t per = filter.size() / static_cast<size_t>(cout);
    QuantParams wq{{}, {}, axis}, bq{{}, {}, 0};
    std::vector<int8_t> qf(filter.size());
    std::vector<int32_t> qb(static_cast<size_t>(cout));
    const float in_scale = tensors_[x_tensor].q.scale[0];
    for (int64_t o = 0; o < cout; ++o) {
      auto at = [&](size_t k) -> float& {
        return depthwise ? filter[k * cout + o] : filter[static_cast<size_t>(o) * per + k];
      };
      float max_abs = 0;
      for (size_t k = 0; k < per; ++k) max_abs = std::max(max_abs, std::abs(at(k)));
      const float s = SymmetricScale(max_abs);
      for (size_t k = 0; k < per; ++k) {
        const size_t flat = depthwise ? k * cout + o : static_cast<size_t>(o) * per + k;
        qf[flat] = QuantizeSymmetric(at(k), s);
      }
      wq.scale.push_back(s);
      wq.zero_point.push_back(0);
      const double bs = static_cast<double>(in_scale) * s;
      bq.scale.push_back(static_cast<float>(bs));
      bq.zero_point.push_back(0);
      qb[o] = static_cast<int32_t>(std::clamp<double>(std::nearbyint(bias[o] / bs), INT32_MIN, INT32_MAX));
    }
    filter_t = NewConstTensor(wname, fb::TensorType::INT8, fshape, Bytes(qf), &wq);
    bias_t = NewConstTensor(bname, fb::TensorType::INT32, {static_cast<int32_t>(cout)}, Bytes(qb), &bq);
  }
  const int32_t sh = static_cast<int32_t>(win.strides[0]), sw = static_cast<int32_t>(win.strides[1]);
  const int32_t dh = static_cast<int32_t>(win.dilations[0]), dw = static_cast<int32_t>(win.dilations[1]);
  const fb::Padding pad = *padding;
  if (!depthwise) {
    AddOp(fb::BuiltinOperator::CONV_2D, {x_tensor, filter_t, bias_t}, {out}, [=](Builder& b) {
      return std::make_pair(fb::BuiltinOptions::Conv2DOptions,
                            fb::CreateConv2DOptions(b, pad, sw, sh, act, dw, dh).Union());
    });
  } else {
    const int32_t mult = static_cast<int32_t>(cout / group);
    AddOp(fb::BuiltinOperator::DEPTHWISE_CONV_2D, {x_tensor, filter_t, bias_t}, {out}, [=](Builder& b) {
      return std::make_pair(fb::BuiltinOptions::DepthwiseConv2DOptions,
                            fb::CreateDepthwiseConv2DOptions(b, pad, sw, sh, mult, act, dw, dh).Union());
    });
  }
  return Status::OK();
}

Status Exporter::ConvertPool(const graph::Node& n) {
  STRATA_ASSIGN_OR_RETURN(Mapped x, Input(n, 0));
  if (x.layout != Layout::kNchwAsNhwc)
    return UnimplementedError("TFLite export: ", n.Describe(), " pools an NCHW tensor that is not channels-last");
  STRATA_ASSIGN_OR_RETURN(PartialShape xs, ShapeOf(n.inputs[0]));
  const int64_t h = xs.dims[2].known() ? xs.dims[2].value : -1, w = xs.dims[3].known() ? xs.dims[3].value : -1;
  if (n.op_type == "GlobalAveragePool") {
    const int axes_t =
        NewConstTensor(n.outputs[0] + "/axes", fb::TensorType::INT32, {2}, Bytes(std::vector<int32_t>{1, 2}));
    STRATA_ASSIGN_OR_RETURN(int out, NewActivation(n.outputs[0], Layout::kNchwAsNhwc));
    AddOp(fb::BuiltinOperator::MEAN, {x.tensor, axes_t}, {out}, [](Builder& b) {
      return std::make_pair(fb::BuiltinOptions::ReducerOptions, fb::CreateReducerOptions(b, true).Union());
    });
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, n.RequireInts("kernel_shape"));
  if (n.GetInt("ceil_mode", 0) != 0)
    return UnimplementedError("TFLite export: ", n.Describe(), " uses ceil_mode=1, which TFLite's pools lack");
  if (n.GetInts("dilations", {1, 1}) != std::vector<int64_t>{1, 1})
    return UnimplementedError("TFLite export: ", n.Describe(), " has dilations, which TFLite's pools lack");
  STRATA_ASSIGN_OR_RETURN(Window win, ResolveWindow(n, kernel, h, w));
  win.dilations = {1, 1};
  std::optional<fb::Padding> padding = TflitePadding(win, h, w);
  const bool avg = n.op_type == "AveragePool";
  if (!padding || (avg && *padding == fb::Padding::SAME && n.GetInt("count_include_pad", 0) != 0))
    return UnimplementedError("TFLite export: ", n.Describe(), " pads in a way TFLite's pools cannot (pads ",
                              StrJoin(win.pads, ","),
                              "; TFLite has VALID and SAME, the latter not counting the "
                              "padding in averages)");
  const TensorRec in_rec = tensors_[x.tensor];
  // TFLite's int8 pools keep the input's scale and zero point.
  STRATA_ASSIGN_OR_RETURN(int out, NewActivation(n.outputs[0], Layout::kNchwAsNhwc, &in_rec));
  const int32_t sh = static_cast<int32_t>(win.strides[0]), sw = static_cast<int32_t>(win.strides[1]);
  const int32_t kh = static_cast<int32_t>(kernel[0]), kw = static_cast<int32_t>(kernel[1]);
  const fb::Padding pad = *padding;
  AddOp(avg ? fb::BuiltinOperator::AVERAGE_POOL_2D : fb::BuiltinOperator::MAX_POOL_2D, {x.tensor}, {out},
        [=](Builder& b) {
          return std::make_pair(fb::BuiltinOptions::Pool2DOptions,
                                fb::CreatePool2DOptions(b, pad, sw, sh, kw, kh).Union());
        });
  return Status::OK();
}

Status Exporter::ConvertDense(const graph::Node& n, size_t index) {
  STRATA_ASSIGN_OR_RETURN(Mapped a, Input(n, 0));
  STRATA_ASSIGN_OR_RETURN(PartialShape as, ShapeOf(n.inputs[0]));
  if (a.layout != Layout::kPlain || as.rank() != 2)
    return UnimplementedError("TFLite export: ", n.Describe(), " multiplies a rank-", as.rank(),
                              " input; FULLY_CONNECTED is exported for 2-D inputs [batch, features]");
  const Tensor* w = n.has_input(1) ? Constant(n.inputs[1]) : nullptr;
  if (w == nullptr || w->dtype() != DType::kFloat32 || w->rank() != 2)
    return UnimplementedError("TFLite export: ", n.Describe(), " needs a constant float32 2-D weight");
  bool trans_b = false;
  const Tensor* bias = nullptr;
  std::string after = n.outputs[0];
  size_t last = index;
  if (n.op_type == "Gemm") {
    if (n.GetInt("transA", 0) != 0 || n.GetFloat("alpha", 1.0f) != 1.0f || n.GetFloat("beta", 1.0f) != 1.0f)
      return UnimplementedError("TFLite export: ", n.Describe(), " has transA, alpha or beta; FULLY_CONNECTED has not");
    trans_b = n.GetInt("transB", 0) != 0;
    if (n.has_input(2)) {
      bias = Constant(n.inputs[2]);
      if (bias == nullptr) return UnimplementedError("TFLite export: ", n.Describe(), " needs a constant bias C");
    }
  }
  const int64_t k = trans_b ? w->dim(1) : w->dim(0), units = trans_b ? w->dim(0) : w->dim(1);
  // MatMul followed by Add of a constant [units] vector (Keras's Dense): the Add is the bias.
  if (bias == nullptr && graph_outputs_.count(after) == 0 && readers_[after] == 1) {
    for (size_t j = index + 1; j < g().nodes.size(); ++j) {
      const graph::Node& r = g().nodes[j];
      if (std::find(r.inputs.begin(), r.inputs.end(), after) == r.inputs.end()) continue;
      if (r.op_type == "Add" && r.inputs.size() == 2) {
        const Tensor* c = Constant(r.inputs[0] == after ? r.inputs[1] : r.inputs[0]);
        if (c != nullptr && c->dtype() == DType::kFloat32 && c->num_elements() == units &&
            c->dim(c->rank() - 1) == units) {
          bias = c;
          fused_.insert(j);
          after = r.outputs[0];
          last = j;
        }
      }
      break;
    }
  }
  if (bias != nullptr && bias->num_elements() != units)
    return UnimplementedError("TFLite export: ", n.Describe(), ": the bias has ", bias->num_elements(),
                              " values, not one per unit (", units, ")");
  std::string out_value;
  const fb::ActivationFunctionType act = FuseActivation(last, after, &out_value);
  STRATA_ASSIGN_OR_RETURN(int out, NewActivation(out_value, Layout::kPlain));
  map_[n.outputs[0]] = map_[after] = map_[out_value];

  // FULLY_CONNECTED weights are [units, k].
  const float* wv = w->data<float>();
  std::vector<float> weights(static_cast<size_t>(units * k));
  for (int64_t u = 0; u < units; ++u)
    for (int64_t i = 0; i < k; ++i) weights[u * k + i] = trans_b ? wv[u * k + i] : wv[i * units + u];
  std::vector<float> b = bias != nullptr ? bias->ToVector<float>() : std::vector<float>(static_cast<size_t>(units), 0);
  const std::vector<int32_t> wshape = {static_cast<int32_t>(units), static_cast<int32_t>(k)};
  const std::string bname = bias != nullptr ? n.outputs[0] + "/bias" : n.outputs[0] + "/zero_bias";
  int w_t, b_t;
  if (!o_.int8) {
    w_t = NewConstTensor(n.inputs[1], fb::TensorType::FLOAT32, wshape, Bytes(weights));
    b_t = NewConstTensor(bname, fb::TensorType::FLOAT32, {static_cast<int32_t>(units)}, Bytes(b));
  } else {
    float max_abs = 0;
    for (float v : weights) max_abs = std::max(max_abs, std::abs(v));
    QuantParams wq{{SymmetricScale(max_abs)}, {0}, 0};
    std::vector<int8_t> qw(weights.size());
    for (size_t i = 0; i < weights.size(); ++i) qw[i] = QuantizeSymmetric(weights[i], wq.scale[0]);
    const double bs = static_cast<double>(tensors_[a.tensor].q.scale[0]) * wq.scale[0];
    QuantParams bq{{static_cast<float>(bs)}, {0}, 0};
    std::vector<int32_t> qb(b.size());
    for (size_t i = 0; i < b.size(); ++i)
      qb[i] = static_cast<int32_t>(std::clamp<double>(std::nearbyint(b[i] / bs), INT32_MIN, INT32_MAX));
    w_t = NewConstTensor(n.inputs[1], fb::TensorType::INT8, wshape, Bytes(qw), &wq);
    b_t = NewConstTensor(bname, fb::TensorType::INT32, {static_cast<int32_t>(units)}, Bytes(qb), &bq);
  }
  AddOp(fb::BuiltinOperator::FULLY_CONNECTED, {a.tensor, w_t, b_t}, {out}, [=](Builder& b) {
    return std::make_pair(fb::BuiltinOptions::FullyConnectedOptions, fb::CreateFullyConnectedOptions(b, act).Union());
  });
  return Status::OK();
}

Status Exporter::ConvertBinary(const graph::Node& n, size_t index) {
  if (n.inputs.size() != 2) return InvalidArgumentError(n.Describe(), ": expected 2 inputs");
  int32_t operands[2];
  Layout layout = Layout::kPlain;
  int variable = -1;
  for (int i = 0; i < 2; ++i) {
    if (Constant(n.inputs[i]) == nullptr) {
      STRATA_ASSIGN_OR_RETURN(Mapped m, Input(n, i));
      if (variable >= 0 && m.layout != map_[n.inputs[variable]].layout)
        return UnimplementedError("TFLite export: ", n.Describe(), " mixes a channels-last and a plain operand");
      layout = m.layout;
      operands[i] = m.tensor;
      variable = i;
    }
  }
  if (variable < 0) return InternalError(n.Describe(), ": both operands are constants after folding");
  for (int i = 0; i < 2; ++i) {
    const Tensor* c = Constant(n.inputs[i]);
    if (c == nullptr) continue;
    if (c->dtype() != DType::kFloat32)
      return UnimplementedError("TFLite export: ", n.Describe(), " has a ", DTypeName(c->dtype()), " constant");
    Tensor v = *c;
    std::vector<int32_t> shape;
    for (int64_t d : c->shape().dims()) shape.push_back(static_cast<int32_t>(d));
    if (layout == Layout::kNchwAsNhwc && c->num_elements() > 1) {
      // Broadcast in NCHW: right-align to rank 4, then permute the constant's data and shape to NHWC.
      if (c->rank() > 4) return UnimplementedError("TFLite export: ", n.Describe(), " broadcasts a rank-5 constant");
      std::vector<int64_t> d4(4 - c->rank(), 1);
      for (int64_t d : c->shape().dims()) d4.push_back(d);
      const int64_t N = d4[0], C = d4[1], H = d4[2], W = d4[3];
      std::vector<float> src = c->ToVector<float>(), dst(src.size());
      for (int64_t a = 0; a < N; ++a)
        for (int64_t ch = 0; ch < C; ++ch)
          for (int64_t y = 0; y < H; ++y)
            for (int64_t x = 0; x < W; ++x) dst[((a * H + y) * W + x) * C + ch] = src[((a * C + ch) * H + y) * W + x];
      v = Tensor::FromVector(dst);
      shape = {static_cast<int32_t>(N), static_cast<int32_t>(H), static_cast<int32_t>(W), static_cast<int32_t>(C)};
    }
    operands[i] = FloatConstant(n.inputs[i], v, shape);
  }
  std::string out_value;
  const fb::ActivationFunctionType act = FuseActivation(index, n.outputs[0], &out_value);
  STRATA_ASSIGN_OR_RETURN(int out, NewActivation(out_value, layout));
  map_[n.outputs[0]] = map_[out_value];
  if (n.op_type == "Add") {
    AddOp(fb::BuiltinOperator::ADD, {operands[0], operands[1]}, {out}, [=](Builder& b) {
      return std::make_pair(fb::BuiltinOptions::AddOptions, fb::CreateAddOptions(b, act).Union());
    });
  } else if (n.op_type == "Sub") {
    AddOp(fb::BuiltinOperator::SUB, {operands[0], operands[1]}, {out}, [=](Builder& b) {
      return std::make_pair(fb::BuiltinOptions::SubOptions, fb::CreateSubOptions(b, act).Union());
    });
  } else {
    AddOp(fb::BuiltinOperator::MUL, {operands[0], operands[1]}, {out}, [=](Builder& b) {
      return std::make_pair(fb::BuiltinOptions::MulOptions, fb::CreateMulOptions(b, act).Union());
    });
  }
  return Status::OK();
}

Status Exporter::ConvertReshape(const graph::Node& n) {
  STRATA_ASSIGN_OR_RETURN(Mapped x, Input(n, 0));
  if (x.layout != Layout::kPlain)
    return UnimplementedError("TFLite export: ", n.Describe(),
                              " reshapes an NCHW value held channels-last; "
                              "transpose it back to NHWC first (as Keras's Flatten does)");
  STRATA_ASSIGN_OR_RETURN(PartialShape out_shape, ShapeOf(n.outputs[0]));
  std::vector<int32_t> new_shape;
  int unknown = 0;
  for (const Dim& d : out_shape.dims) {
    new_shape.push_back(d.known() ? static_cast<int32_t>(d.value) : -1);
    unknown += !d.known();
  }
  if (unknown > 1)
    return UnimplementedError("TFLite export: ", n.Describe(), " has ", unknown,
                              " output dims not known at export time; RESHAPE allows one (-1)");
  const int shape_t = NewConstTensor(n.outputs[0] + "/shape", fb::TensorType::INT32,
                                     {static_cast<int32_t>(new_shape.size())}, Bytes(new_shape));
  const TensorRec in_rec = tensors_[x.tensor];
  STRATA_ASSIGN_OR_RETURN(int out, NewActivation(n.outputs[0], Layout::kPlain, &in_rec));
  AddOp(fb::BuiltinOperator::RESHAPE, {x.tensor, shape_t}, {out}, [new_shape](Builder& b) {
    return std::make_pair(fb::BuiltinOptions::ReshapeOptions, fb::CreateReshapeOptionsDirect(b, &new_shape).Union());
  });
  return Status::OK();
}

Status Exporter::ConvertUnary(const graph::Node& n, fb::BuiltinOperator code, OptionsFn options) {
  STRATA_ASSIGN_OR_RETURN(Mapped x, Input(n, 0));
  QuantParams fixed;
  const QuantParams* fixed_ptr = nullptr;
  if (code == fb::BuiltinOperator::SOFTMAX || code == fb::BuiltinOperator::LOGISTIC) {
    fixed = {{1.0f / 256.0f}, {-128}, 0};  // TFLite's int8 SOFTMAX / LOGISTIC output: [0, 1)
    fixed_ptr = &fixed;
  } else if (code == fb::BuiltinOperator::TANH) {
    fixed = {{1.0f / 128.0f}, {0}, 0};  // TFLite's int8 TANH output: [-1, 1)
    fixed_ptr = &fixed;
  }
  STRATA_ASSIGN_OR_RETURN(int out, NewActivation(n.outputs[0], x.layout, nullptr, fixed_ptr));
  AddOp(code, {x.tensor}, {out}, std::move(options));
  return Status::OK();
}

Status Exporter::ConvertNode(size_t index) {
  const graph::Node& n = g().nodes[index];
  if (fused_.count(index) != 0) return Status::OK();
  if (!n.domain.empty())
    return UnimplementedError("TFLite export: ", n.Describe(), " is in domain '", n.domain, "'; no TFLite mapping");
  const std::string& op = n.op_type;
  if (op == "Identity" || op == "Dropout") {
    STRATA_ASSIGN_OR_RETURN(Mapped x, Input(n, 0));
    map_[n.outputs[0]] = x;
    return Status::OK();
  }
  if (op == "Transpose") {
    STRATA_ASSIGN_OR_RETURN(Mapped x, Input(n, 0));
    const std::vector<int64_t> perm = n.GetInts("perm");
    if (x.layout == Layout::kPlain && perm == std::vector<int64_t>{0, 3, 1, 2}) {
      map_[n.outputs[0]] = {x.tensor, Layout::kNchwAsNhwc};
      return Status::OK();
    }
    if (x.layout == Layout::kNchwAsNhwc && perm == std::vector<int64_t>{0, 2, 3, 1}) {
      map_[n.outputs[0]] = {x.tensor, Layout::kPlain};
      return Status::OK();
    }
    return UnimplementedError("TFLite export: ", n.Describe(), " (perm ", StrJoin(perm, ","),
                              ") is not one of the NHWC<->NCHW transposes around convolutions that the export "
                              "absorbs into TFLite's NHWC layout");
  }
  if (op == "Conv") return ConvertConv(n, index);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool") return ConvertPool(n);
  if (op == "MatMul" || op == "Gemm") return ConvertDense(n, index);
  if (op == "Add" || op == "Sub" || op == "Mul") return ConvertBinary(n, index);
  if (op == "Reshape") return ConvertReshape(n);
  if (op == "Flatten") {
    STRATA_ASSIGN_OR_RETURN(PartialShape s, ShapeOf(n.inputs[0]));
    if (n.GetInt("axis", 1) != 1 || (s.rank() > 2 && map_[n.inputs[0]].layout != Layout::kPlain))
      return UnimplementedError("TFLite export: ", n.Describe(), " flattens a channels-last value or not at axis 1");
    return ConvertReshape(n);
  }
  if (op == "Relu") return ConvertUnary(n, fb::BuiltinOperator::RELU);
  if (op == "Sigmoid") return ConvertUnary(n, fb::BuiltinOperator::LOGISTIC);
  if (op == "Tanh") return ConvertUnary(n, fb::BuiltinOperator::TANH);
  if (op == "Softmax") {
    STRATA_ASSIGN_OR_RETURN(PartialShape s, ShapeOf(n.inputs[0]));
    const int64_t axis = n.GetInt("axis", n.opset >= 13 || n.opset == 0 ? -1 : 1);
    if ((axis != -1 && axis != s.rank() - 1) || map_[n.inputs[0]].layout != Layout::kPlain)
      return UnimplementedError("TFLite export: ", n.Describe(), " is over axis ", axis,
                                "; TFLite's SOFTMAX is over the last axis");
    return ConvertUnary(n, fb::BuiltinOperator::SOFTMAX, [](Builder& b) {
      return std::make_pair(fb::BuiltinOptions::SoftmaxOptions, fb::CreateSoftmaxOptions(b, 1.0f).Union());
    });
  }
  return UnimplementedError("TFLite export: no TFLite mapping for ", n.Describe(),
                            "; the export maps Conv (group 1 or depthwise), MaxPool, AveragePool, GlobalAveragePool, "
                            "MatMul/Gemm with constant weights, Add, Sub, Mul, Relu, Clip(0,6) after a conv or dense, "
                            "Sigmoid, Tanh, Softmax, Reshape, Flatten, Identity and NHWC<->NCHW Transposes");
}

StatusOr<std::string> Exporter::Run() {
  STRATA_RETURN_IF_ERROR(TflitePrepare(&m_));
  STRATA_RETURN_IF_ERROR(graph::InferGraph(g(), g().inputs, graph::InferOptions{false}, &types_));
  for (const auto& o : g().outputs) graph_outputs_.insert(o.name);
  for (const auto& n : g().nodes)
    for (const auto& in : n.inputs)
      if (!in.empty()) readers_[in]++;
  for (const auto& o : g().outputs) readers_[o.name]++;

  for (const graph::ValueInfo& in : g().inputs) {
    if (in.dtype != DType::kFloat32)
      return UnimplementedError("TFLite export: input '", in.name, "' is ", DTypeName(in.dtype),
                                "; the export handles float32 inputs");
    STRATA_ASSIGN_OR_RETURN(PartialShape s, ShapeOf(in.name));
    (void)s;
    if (!o_.int8) {
      STRATA_ASSIGN_OR_RETURN(int t, NewActivation(in.name, Layout::kPlain));
      inputs_.push_back(t);
      continue;
    }
    o_.int8 = false;  // the signature tensor stays float32
    auto ft = NewActivation(in.name, Layout::kPlain);
    o_.int8 = true;
    if (!ft.ok()) return ft.status();
    inputs_.push_back(*ft);
    STRATA_ASSIGN_OR_RETURN(int qt, NewActivation(in.name, Layout::kPlain));
    tensors_[qt].name = in.name + "/quantized";
    AddOp(fb::BuiltinOperator::QUANTIZE, {*ft}, {qt}, [](Builder& b) {
      return std::make_pair(fb::BuiltinOptions::QuantizeOptions, fb::CreateQuantizeOptions(b).Union());
    });
  }
  for (size_t i = 0; i < g().nodes.size(); ++i) STRATA_RETURN_IF_ERROR(ConvertNode(i));

  std::set<int> named;
  for (const graph::ValueInfo& out : g().outputs) {
    auto it = map_.find(out.name);
    if (it == map_.end()) return InternalError("TFLite export: output '", out.name, "' was not computed");
    if (it->second.layout != Layout::kPlain)
      return UnimplementedError("TFLite export: output '", out.name, "' is an NCHW value held channels-last");
    int t = it->second.tensor;
    if (std::find(inputs_.begin(), inputs_.end(), t) != inputs_.end() || named.count(t) != 0)
      return UnimplementedError("TFLite export: output '", out.name,
                                "' is the same tensor as a model input or another output");
    named.insert(t);
    if (o_.int8) {
      TensorRec f = tensors_[t];
      f.name = out.name;
      f.type = fb::TensorType::FLOAT32;
      f.quantized = false;
      f.q = {};
      tensors_[t].name = out.name + "/quantized";
      tensors_.push_back(f);
      const int ft = static_cast<int>(tensors_.size()) - 1;
      AddOp(fb::BuiltinOperator::DEQUANTIZE, {t}, {ft}, [](Builder& b) {
        return std::make_pair(fb::BuiltinOptions::DequantizeOptions, fb::CreateDequantizeOptions(b).Union());
      });
      t = ft;
    } else {
      tensors_[t].name = out.name;
    }
    outputs_.push_back(t);
  }
  return Serialize();
}

// The operator version TFLite's converter would record for this op (int8 kernels need the versions that
// introduced them; float32 ops are version 1).
int OpVersion(fb::BuiltinOperator code, bool int8) {
  if (!int8) return 1;
  switch (code) {
    case fb::BuiltinOperator::CONV_2D:
    case fb::BuiltinOperator::DEPTHWISE_CONV_2D:
      return 3;
    case fb::BuiltinOperator::FULLY_CONNECTED:
      return 4;
    case fb::BuiltinOperator::RESHAPE:
      return 1;
    default:
      return 2;
  }
}

StatusOr<std::string> Exporter::Serialize() {
  Builder b(1 << 16);
  // Operator codes, one per distinct builtin.
  std::vector<fb::BuiltinOperator> codes;
  for (const OpRec& op : ops_)
    if (std::find(codes.begin(), codes.end(), op.code) == codes.end()) codes.push_back(op.code);
  std::vector<flatbuffers::Offset<fb::OperatorCode>> code_offsets;
  for (fb::BuiltinOperator c : codes) {
    const int v = static_cast<int>(c);
    code_offsets.push_back(
        fb::CreateOperatorCode(b, static_cast<int8_t>(std::min(v, 127)), 0, OpVersion(c, o_.int8), c));
  }
  std::vector<flatbuffers::Offset<fb::Tensor>> tensor_offsets;
  for (const TensorRec& t : tensors_) {
    flatbuffers::Offset<fb::QuantizationParameters> q = 0;
    if (t.quantized)
      q = fb::CreateQuantizationParametersDirect(b, nullptr, nullptr, &t.q.scale, &t.q.zero_point, t.q.axis);
    tensor_offsets.push_back(
        fb::CreateTensorDirect(b, &t.shape, t.type, t.buffer, t.name.c_str(), q, false, &t.signature, true));
  }
  std::vector<flatbuffers::Offset<fb::Operator>> op_offsets;
  for (const OpRec& op : ops_) {
    const uint32_t idx = static_cast<uint32_t>(std::find(codes.begin(), codes.end(), op.code) - codes.begin());
    std::pair<fb::BuiltinOptions, flatbuffers::Offset<void>> opts{fb::BuiltinOptions::NONE, 0};
    if (op.options) opts = op.options(b);
    op_offsets.push_back(fb::CreateOperatorDirect(b, idx, &op.inputs, &op.outputs, opts.first, opts.second));
  }
  auto subgraph = fb::CreateSubGraphDirect(b, &tensor_offsets, &inputs_, &outputs_, &op_offsets, "main");
  std::vector<flatbuffers::Offset<fb::Buffer>> buffer_offsets;
  for (const std::string& data : buffers_) {
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> v = 0;
    if (!data.empty()) {
      b.ForceVectorAlignment(data.size(), sizeof(uint8_t), 16);
      v = b.CreateVector(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    }
    buffer_offsets.push_back(fb::CreateBuffer(b, v));
  }
  std::vector<flatbuffers::Offset<fb::TensorMap>> sig_in, sig_out;
  for (size_t i = 0; i < inputs_.size(); ++i)
    sig_in.push_back(fb::CreateTensorMapDirect(b, g().inputs[i].name.c_str(), static_cast<uint32_t>(inputs_[i])));
  for (size_t i = 0; i < outputs_.size(); ++i)
    sig_out.push_back(fb::CreateTensorMapDirect(b, g().outputs[i].name.c_str(), static_cast<uint32_t>(outputs_[i])));
  std::vector<flatbuffers::Offset<fb::SignatureDef>> sigs = {
      fb::CreateSignatureDefDirect(b, &sig_in, &sig_out, o_.signature_key.c_str(), 0)};
  std::vector<flatbuffers::Offset<fb::SubGraph>> subgraphs = {subgraph};
  auto model = fb::CreateModelDirect(b, 3, &code_offsets, &subgraphs, o_.description.c_str(), &buffer_offsets, nullptr,
                                     nullptr, &sigs);
  fb::FinishModelBuffer(b, model);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

}  // namespace

Status TflitePrepare(graph::Model* model) {
  STRATA_RETURN_IF_ERROR(graph::FoldConstants(&model->graph));
  STRATA_RETURN_IF_ERROR(graph::EliminateDeadCode(&model->graph));
  return graph::TopologicalSort(&model->graph);
}

std::vector<std::string> TfliteCalibrationValues(const graph::Model& prepared) {
  std::vector<std::string> values;
  graph::InferredGraph types;
  const bool typed = graph::InferGraph(prepared.graph, prepared.graph.inputs, graph::InferOptions{false}, &types).ok();
  for (const auto& in : prepared.graph.inputs)
    if (in.dtype == DType::kFloat32) values.push_back(in.name);
  for (const auto& n : prepared.graph.nodes)
    for (const auto& o : n.outputs) {
      if (o.empty()) continue;
      auto it = types.types.find(o);
      if (!typed || (it != types.types.end() && it->second.dtype == DType::kFloat32)) values.push_back(o);
    }
  return values;
}

StatusOr<std::string> ExportTflite(const graph::Model& model, const TfliteExportOptions& options) {
  return Exporter(model, options).Run();
}

}  // namespace strata::tf
