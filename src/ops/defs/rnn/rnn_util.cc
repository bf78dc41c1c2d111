#include "ops/defs/rnn/rnn_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "ops/defs/nn/gemm_kernel.h"

namespace strata::ops::rnn {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The activation named `name` with its ONNX default alpha/beta.
StatusOr<Activation> ParseActivation(const Node& node, const std::string& name) {
  const std::string n = Lower(name);
  Activation a;
  if (n == "relu") a.kind = ActKind::kRelu;
  else if (n == "tanh") a.kind = ActKind::kTanh;
  else if (n == "sigmoid") a.kind = ActKind::kSigmoid;
  else if (n == "affine") a = {ActKind::kAffine, 1.0f, 0.0f};
  else if (n == "leakyrelu") a = {ActKind::kLeakyRelu, 0.01f, 0.0f};
  else if (n == "thresholdedrelu") a = {ActKind::kThresholdedRelu, 1.0f, 0.0f};
  else if (n == "scaledtanh") a = {ActKind::kScaledTanh, 1.0f, 1.0f};
  else if (n == "hardsigmoid") a = {ActKind::kHardSigmoid, 0.2f, 0.5f};
  else if (n == "elu") a = {ActKind::kElu, 1.0f, 0.0f};
  else if (n == "softsign") a.kind = ActKind::kSoftsign;
  else if (n == "softplus") a.kind = ActKind::kSoftplus;
  else
    return InvalidArgumentError(node.Describe(), ": unknown activation '", name, "' (expected Relu, Tanh, Sigmoid, ",
                                "Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign or Softplus)");
  return a;
}

template <typename C>
StatusOr<std::vector<C>> ReadFloats(const Tensor& t) {
  std::vector<C> out(static_cast<size_t>(t.num_elements()));
  STRATA_RETURN_IF_ERROR(DispatchFloat(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<C>(ToCompute(p[i]));
    return Status::OK();
  }));
  return out;
}

// Swaps the first two axes of a [n0, n1, inner] array.
template <typename C>
std::vector<C> SwapFirstAxes(const std::vector<C>& v, int64_t n0, int64_t n1, int64_t inner) {
  std::vector<C> out(v.size());
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < n1; ++j)
      std::copy_n(v.begin() + (i * n1 + j) * inner, inner, out.begin() + (j * n0 + i) * inner);
  return out;
}

}  // namespace

template <typename C>
void Activate(const Activation& a, C* x, int64_t n) {
  const C al = static_cast<C>(a.alpha), be = static_cast<C>(a.beta);
  switch (a.kind) {
    case ActKind::kRelu: for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0 ? x[i] : C(0); break;
    case ActKind::kTanh: for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]); break;
    case ActKind::kSigmoid: for (int64_t i = 0; i < n; ++i) x[i] = C(1) / (C(1) + std::exp(-x[i])); break;
    case ActKind::kAffine: for (int64_t i = 0; i < n; ++i) x[i] = al * x[i] + be; break;
    case ActKind::kLeakyRelu: for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= 0 ? x[i] : al * x[i]; break;
    case ActKind::kThresholdedRelu: for (int64_t i = 0; i < n; ++i) x[i] = x[i] > al ? x[i] : C(0); break;
    case ActKind::kScaledTanh: for (int64_t i = 0; i < n; ++i) x[i] = al * std::tanh(be * x[i]); break;
    case ActKind::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = std::max(C(0), std::min(C(1), al * x[i] + be));
      break;
    case ActKind::kElu: for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= 0 ? x[i] : al * (std::exp(x[i]) - C(1)); break;
    case ActKind::kSoftsign: for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (C(1) + std::fabs(x[i])); break;
    case ActKind::kSoftplus: for (int64_t i = 0; i < n; ++i) x[i] = std::log1p(std::exp(x[i])); break;
  }
}

StatusOr<RnnAttrs> ReadAttrs(const Node& node, const std::vector<std::string>& default_acts) {
  RnnAttrs a;
  a.hidden = node.GetInt("hidden_size", -1);
  if (node.HasAttr("hidden_size") && a.hidden < 1)
    return InvalidArgumentError(node.Describe(), ": hidden_size must be >= 1, got ", a.hidden);
  const std::string dir = node.GetString("direction", "forward");
  if (dir == "bidirectional") a.dirs = 2;
  else if (dir == "reverse") a.reverse = true;
  else if (dir != "forward")
    return InvalidArgumentError(node.Describe(), ": direction must be forward, reverse or bidirectional, got '", dir, "'");
  if (node.HasAttr("clip")) {
    a.has_clip = true;
    a.clip = node.GetFloat("clip", 0);
    if (!(a.clip > 0)) return InvalidArgumentError(node.Describe(), ": clip must be > 0, got ", a.clip);
  }
  a.layout = static_cast<int>(node.GetInt("layout", 0));
  if (a.layout != 0 && a.layout != 1)
    return InvalidArgumentError(node.Describe(), ": layout must be 0 or 1, got ", a.layout);
  a.linear_before_reset = node.GetInt("linear_before_reset", 0) != 0;
  a.input_forget = node.GetInt("input_forget", 0) != 0;
  const size_t per_dir = default_acts.size();
  std::vector<std::string> names = node.GetStrings("activations");
  if (names.empty())
    for (int d = 0; d < a.dirs; ++d) names.insert(names.end(), default_acts.begin(), default_acts.end());
  if (names.size() == per_dir && a.dirs == 2) names.insert(names.end(), names.begin(), names.end());
  if (names.size() != per_dir * a.dirs)
    return InvalidArgumentError(node.Describe(), ": expected ", per_dir * a.dirs, " activations (", per_dir,
                                " per direction), got ", names.size());
  const std::vector<float> alphas = node.GetFloats("activation_alpha");
  const std::vector<float> betas = node.GetFloats("activation_beta");
  for (size_t i = 0; i < names.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(Activation act, ParseActivation(node, names[i]));
    if (i < alphas.size()) act.alpha = alphas[i];
    if (i < betas.size()) act.beta = betas[i];
    a.acts.push_back(act);
  }
  return a;
}

Status InferRnn(InferContext& ctx, int gates, const std::vector<std::string>& default_acts) {
  STRATA_ASSIGN_OR_RETURN(RnnAttrs a, ReadAttrs(ctx.node(), default_acts));
  const DType dt = ctx.input_dtype(0);
  if (dt != DType::kUndefined && dt != DType::kFloat32 && dt != DType::kFloat16 && dt != DType::kFloat64 &&
      dt != DType::kBFloat16)
    return ctx.Error("X must be float16, float32 or float64, got ", DTypeName(dt));
  const char* names[] = {"X", "W", "R"};
  for (int i = 0; i < 3; ++i) {
    if (ctx.input_shape(i).rank_known && ctx.input_shape(i).rank() != 3)
      return ctx.Error(names[i], " must have rank 3, got ", ctx.input_shape(i).ToString());
    if (i > 0 && ctx.input_dtype(i) != DType::kUndefined && dt != DType::kUndefined && ctx.input_dtype(i) != dt)
      return ctx.Error(names[i], " must have X's element type ", DTypeName(dt), ", got ", DTypeName(ctx.input_dtype(i)));
  }
  const PartialShape& x = ctx.input_shape(0);
  const PartialShape& w = ctx.input_shape(1);
  const PartialShape& r = ctx.input_shape(2);
  Dim seq, batch, hidden = a.hidden > 0 ? Dim(a.hidden) : Dim();
  if (x.rank_known) {
    seq = x.dims[a.layout == 0 ? 0 : 1];
    batch = x.dims[a.layout == 0 ? 1 : 0];
  }
  if (r.rank_known && !hidden.known()) hidden = r.dims[2];
  if (w.rank_known && w.dims[0].known() && w.dims[0].value != a.dirs)
    return ctx.Error("W's first dimension must be the number of directions (", a.dirs, "), got ", w.ToString());
  if (w.rank_known && w.dims[1].known() && hidden.known() && w.dims[1].value != gates * hidden.value)
    return ctx.Error("W must have ", gates, " * hidden_size = ", gates * hidden.value, " rows, got ", w.ToString());
  const Dim dirs(a.dirs);
  ctx.SetOutput(0, dt, PartialShape::Of(a.layout == 0 ? std::vector<Dim>{seq, dirs, batch, hidden}
                                                       : std::vector<Dim>{batch, seq, dirs, hidden}));
  for (int i = 1; i < ctx.num_outputs(); ++i)
    ctx.SetOutput(i, dt, PartialShape::Of(a.layout == 0 ? std::vector<Dim>{dirs, batch, hidden}
                                                         : std::vector<Dim>{batch, dirs, hidden}));
  return Status::OK();
}

namespace {

// Reads input `i` (if given) as a [dims...] array of C; checks dtype and shape.
template <typename C>
Status ReadOptional(KernelContext& ctx, int i, const char* name, const Shape& want, std::vector<C>* out) {
  if (!ctx.has_input(i)) {
    out->assign(static_cast<size_t>(want.NumElements()), C(0));
    return Status::OK();
  }
  const Tensor& t = ctx.input(i);
  if (t.dtype() != ctx.input(0).dtype())
    return ctx.Error(name, " must have X's element type ", DTypeName(ctx.input(0).dtype()), ", got ", t.TypeString());
  if (t.shape() != want) return ctx.Error(name, " must have shape ", want.ToString(), ", got ", t.shape().ToString());
  STRATA_ASSIGN_OR_RETURN(*out, ReadFloats<C>(t));
  return Status::OK();
}

}  // namespace

template <typename C>
StatusOr<RnnData<C>> ReadInputs(KernelContext& ctx, const RnnAttrs& a, int gates) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& r = ctx.input(2);
  if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3)
    return ctx.Error("X, W and R must have rank 3, got ", x.shape().ToString(), ", ", w.shape().ToString(), " and ",
                     r.shape().ToString());
  RnnData<C> d;
  d.seq = x.dim(a.layout == 0 ? 0 : 1);
  d.batch = x.dim(a.layout == 0 ? 1 : 0);
  d.input = x.dim(2);
  d.hidden = a.hidden > 0 ? a.hidden : r.dim(2);
  const int64_t h = d.hidden, dirs = a.dirs;
  if (w.shape() != Shape{dirs, gates * h, d.input})
    return ctx.Error("W must have shape ", Shape{dirs, gates * h, d.input}.ToString(), " (directions, ", gates,
                     " * hidden_size, input_size), got ", w.shape().ToString());
  if (r.shape() != Shape{dirs, gates * h, h})
    return ctx.Error("R must have shape ", Shape{dirs, gates * h, h}.ToString(), ", got ", r.shape().ToString());
  for (const Tensor* t : {&w, &r})
    if (t->dtype() != x.dtype()) return ctx.Error("W and R must have X's element type, got ", t->TypeString());
  // The step buffers hold seq * batch * gates * hidden values per direction; a zero-size X can claim any seq and batch.
  if (static_cast<double>(d.seq) * static_cast<double>(d.batch) * static_cast<double>(gates * h * dirs) > 2147483648.0)
    return ctx.Error("X ", x.shape().ToString(), " with hidden_size ", h, " needs too many intermediate values");
  STRATA_ASSIGN_OR_RETURN(d.x, ReadFloats<C>(x));
  if (a.layout == 1) d.x = SwapFirstAxes(d.x, d.batch, d.seq, d.input);
  STRATA_ASSIGN_OR_RETURN(d.w, ReadFloats<C>(w));
  STRATA_ASSIGN_OR_RETURN(d.r, ReadFloats<C>(r));
  STRATA_RETURN_IF_ERROR(ReadOptional(ctx, 3, "B", Shape{dirs, 2 * gates * h}, &d.b));
  d.lens.assign(d.batch, d.seq);
  if (ctx.has_input(4)) {
    STRATA_ASSIGN_OR_RETURN(d.lens, ReadInts(ctx.input(4), "sequence_lens"));
    if (static_cast<int64_t>(d.lens.size()) != d.batch || ctx.input(4).rank() != 1)
      return ctx.Error("sequence_lens must have shape [", d.batch, "], got ", ctx.input(4).shape().ToString());
    for (int64_t l : d.lens)
      if (l < 0 || l > d.seq) return ctx.Error("sequence_lens values must be in [0, ", d.seq, "], got ", l);
  }
  const Shape state = a.layout == 0 ? Shape{dirs, d.batch, h} : Shape{d.batch, dirs, h};
  STRATA_RETURN_IF_ERROR(ReadOptional(ctx, 5, "initial_h", state, &d.h0));
  if (a.layout == 1) d.h0 = SwapFirstAxes(d.h0, d.batch, dirs, h);
  if (gates == 4) {
    STRATA_RETURN_IF_ERROR(ReadOptional(ctx, 6, "initial_c", state, &d.c0));
    if (a.layout == 1) d.c0 = SwapFirstAxes(d.c0, d.batch, dirs, h);
    STRATA_RETURN_IF_ERROR(ReadOptional(ctx, 7, "P", Shape{dirs, 3 * h}, &d.p));
  }
  return d;
}

template <typename C>
Status WriteOutputs(KernelContext& ctx, const RnnAttrs& a, const RnnData<C>& d, const std::vector<C>& y,
                    const std::vector<const std::vector<C>*>& states) {
  const DType dt = ctx.input(0).dtype();
  const int64_t dirs = a.dirs, h = d.hidden;
  auto write = [&](int i, const std::vector<C>& v, const Shape& shape) -> Status {
    if (!ctx.output_wanted(i)) return Status::OK();
    STRATA_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(i, dt, shape));
    return DispatchFloat(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = out->data<T>();
      for (size_t k = 0; k < v.size(); ++k) p[k] = FromCompute<T>(v[k]);
      return Status::OK();
    });
  };
  if (a.layout == 0) {
    STRATA_RETURN_IF_ERROR(write(0, y, Shape{d.seq, dirs, d.batch, h}));
  } else if (ctx.output_wanted(0)) {
    // [seq, dirs, batch, hidden] -> [batch, seq, dirs, hidden]
    std::vector<C> yt(y.size());
    for (int64_t t = 0; t < d.seq; ++t)
      for (int64_t k = 0; k < dirs; ++k)
        for (int64_t b = 0; b < d.batch; ++b)
          std::copy_n(y.begin() + ((t * dirs + k) * d.batch + b) * h, h, yt.begin() + ((b * d.seq + t) * dirs + k) * h);
    STRATA_RETURN_IF_ERROR(write(0, yt, Shape{d.batch, d.seq, dirs, h}));
  }
  for (size_t i = 0; i < states.size(); ++i) {
    if (a.layout == 0) {
      STRATA_RETURN_IF_ERROR(write(static_cast<int>(i) + 1, *states[i], Shape{dirs, d.batch, h}));
    } else {
      STRATA_RETURN_IF_ERROR(
          write(static_cast<int>(i) + 1, SwapFirstAxes(*states[i], dirs, d.batch, h), Shape{d.batch, dirs, h}));
    }
  }
  return Status::OK();
}

template <typename C>
void InputProjection(const RnnData<C>& d, int dir, int gates, const std::vector<C>& bias, std::vector<C>* xw) {
  const int64_t rows = d.seq * d.batch, cols = gates * d.hidden;
  xw->resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) std::copy(bias.begin(), bias.end(), xw->begin() + i * cols);
  if (rows == 0 || cols == 0 || d.input == 0) return;
  nn::GemmSerial<C>(false, true, rows, cols, d.input, C(1), d.x.data(), d.input, d.w.data() + dir * cols * d.input,
                    d.input, C(1), xw->data(), cols);
}

template <typename C>
void AddRecurrent(const RnnData<C>& d, int dir, int gates, int64_t row0, int64_t rows, const C* h, C* g, int64_t ldg) {
  if (d.batch == 0 || rows == 0 || d.hidden == 0) return;
  const C* r = d.r.data() + (dir * gates * d.hidden + row0) * d.hidden;
  nn::GemmSerial<C>(false, true, d.batch, rows, d.hidden, C(1), h, d.hidden, r, d.hidden, C(1), g, ldg);
}

#define STRATA_RNN_INSTANTIATE(C)                                                                                     \
  template void Activate<C>(const Activation&, C*, int64_t);                                                          \
  template StatusOr<RnnData<C>> ReadInputs<C>(KernelContext&, const RnnAttrs&, int);                                  \
  template Status WriteOutputs<C>(KernelContext&, const RnnAttrs&, const RnnData<C>&, const std::vector<C>&,          \
                                  const std::vector<const std::vector<C>*>&);                                         \
  template void InputProjection<C>(const RnnData<C>&, int, int, const std::vector<C>&, std::vector<C>*);              \
  template void AddRecurrent<C>(const RnnData<C>&, int, int, int64_t, int64_t, const C*, C*, int64_t);
STRATA_RNN_INSTANTIATE(float)
STRATA_RNN_INSTANTIATE(double)
#undef STRATA_RNN_INSTANTIATE

}  // namespace strata::ops::rnn
