// HannWindow, HammingWindow, BlackmanWindow (opset 17): generalized cosine windows of `size` samples (an int32/int64
// scalar), w[k] = sum_j (-1)^j a_j cos(2 pi j k / N), with N = size when periodic (default) and size - 1 when
// symmetric (periodic = 0; a one-sample symmetric window is [a_0 - a_1 + ...] evaluated at angle 0):
//   Hann a = (0.5, 0.5), Hamming a = (25/46, 21/46), Blackman a = (0.42, 0.5, 0.08).
// output_datatype (default float32) sets the element type. Three table rows sharing one kernel.
#include <cmath>
#include <numbers>

#include "ops/defs/signal/signal_util.h"

namespace strata::ops {
namespace {

struct WindowDef {
  const char* name;
  double a[3];
};

constexpr WindowDef kHann{"HannWindow", {0.5, 0.5, 0.0}};
constexpr WindowDef kHamming{"HammingWindow", {25.0 / 46.0, 21.0 / 46.0, 0.0}};
constexpr WindowDef kBlackman{"BlackmanWindow", {0.42, 0.5, 0.08}};

Status WindowInfer(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dt, signal::ReadOutputDatatype(ctx.node()));
  const DType st = ctx.input_dtype(0);
  if (st != DType::kUndefined && st != DType::kInt32 && st != DType::kInt64)
    return ctx.Error("size must be an int32 or int64 scalar, got ", DTypeName(st));
  Dim n;
  if (const Tensor* s = ctx.input_value(0); s != nullptr && s->num_elements() == 1) {
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInts(*s, "size"));
    if (v[0] >= 0) n = Dim(v[0]);
  }
  ctx.SetOutput(0, dt, PartialShape::Of({n}));
  return Status::OK();
}

template <const WindowDef& W>
Status WindowCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType dt, signal::ReadOutputDatatype(ctx.node()));
  STRATA_ASSIGN_OR_RETURN(int64_t size, signal::ReadIntScalar(ctx, 0, "size"));
  if (size < 0 || size > (int64_t{1} << 26)) return ctx.Error("size must be in [0, 2^26], got ", size);
  const bool periodic = ctx.node().GetInt("periodic", 1) != 0;
  const double n = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> v(static_cast<size_t>(size));
  for (int64_t k = 0; k < size; ++k) {
    const double angle = n > 0 ? 2.0 * std::numbers::pi * static_cast<double>(k) / n : 0.0;
    v[k] = W.a[0] - W.a[1] * std::cos(angle) + W.a[2] * std::cos(2.0 * angle);
  }
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, dt, Shape{size}));
  return signal::FillFromDoubles(v, y);
}

template <const WindowDef& W>
void RegisterWindow(OpRegistry* r) {
  OpSchema s;
  s.name = W.name;
  s.since_version = 17;
  s.min_inputs = 1;
  s.max_inputs = 1;
  s.infer = WindowInfer;
  s.reference = WindowCompute<W>;
  s.no_grad_reason = "generator: its only input is an integer size";
  r->Add(std::move(s));
}

}  // namespace

void RegisterHannWindow(OpRegistry* r) { RegisterWindow<kHann>(r); }
void RegisterHammingWindow(OpRegistry* r) { RegisterWindow<kHamming>(r); }
void RegisterBlackmanWindow(OpRegistry* r) { RegisterWindow<kBlackman>(r); }

}  // namespace strata::ops
