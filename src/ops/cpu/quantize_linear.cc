// QuantizeLinear of float32 with a per-tensor constant scale and zero point into uint8/int8, vectorised (AVX-512 variant, isa.h) and
// split across threads: the QDQ models' QuantizeLinear nodes that the int8 convolutions do not absorb (after a pool,
// after a float32 residual sum) run here instead of the scalar reference loop. Bit-exact with the reference: x is
// divided by the scale (not multiplied by its reciprocal), rounded half to even, offset by the zero point and
// saturated; NaN gives the type's lowest value.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

// GCC 12 reports the deliberately undefined pass-through operand inside its own AVX-512 intrinsics
// (_mm512_undefined_ps) as "may be used uninitialized" once they are inlined here: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "core/parallel.h"
#include "ops/cpu/cpu_kernels.h"

#include "ops/cpu/isa_begin.h"
namespace strata::ops::cpu::STRATA_CPU_NS {
namespace {

Status Decline(std::string_view why) { return UnimplementedError("cpu QuantizeLinear: ", why); }

template <typename Q>
void QuantizeRange(const float* x, Q* y, int64_t begin, int64_t end, float scale, float zp) {
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::lowest());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  int64_t i = begin;
#if STRATA_CPU_HAS_AVX512
  const __m512 vs = _mm512_set1_ps(scale), vz = _mm512_set1_ps(zp), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (; i + 16 <= end; i += 16) {
    __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + i), vs);
    v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
    // max(v, lo) returns lo when v is NaN (the second operand wins on NaN), as the reference's saturation does.
    v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);
    const __m512i n = _mm512_cvtps_epi32(v);
    if constexpr (std::is_same_v<Q, uint8_t>)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtusepi32_epi8(n));
    else
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtsepi32_epi8(n));
  }
#endif
  for (; i < end; ++i) {
    const float v = std::nearbyint(x[i] / scale) + zp;
    y[i] = !(v > lo) ? static_cast<Q>(lo) : (v >= hi ? static_cast<Q>(hi) : static_cast<Q>(v));
  }
}

class QuantizePerTensor final : public Kernel {
 public:
  QuantizePerTensor(Shape shape, DType out, float scale, int32_t zp)
      : shape_(std::move(shape)), out_(out), scale_(scale), zp_(static_cast<float>(zp)) {}
  std::string_view name() const override { return "cpu"; }

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.shape() != shape_ || x.dtype() != DType::kFloat32)
      return ctx.Error("x is ", x.TypeString(), ", the plan was made for float32", shape_.ToString());
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, out_, shape_));
    const float* px = x.data<float>();
    const int64_t n = x.num_elements();
    ParallelFor(n, int64_t{1} << 15, [&](int64_t begin, int64_t end) {
      if (out_ == DType::kUInt8)
        QuantizeRange(px, y->data<uint8_t>(), begin, end, scale_, zp_);
      else
        QuantizeRange(px, y->data<int8_t>(), begin, end, scale_, zp_);
    });
    return Status::OK();
  }

 private:
  Shape shape_;
  DType out_;
  float scale_;
  float zp_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateQuantizeLinear(const KernelInit& init) {
  const Node& node = init.node;
  if (init.inputs.empty() || init.inputs[0].dtype != DType::kFloat32) return Decline("x is not float32");
  if (!init.inputs[0].shape.IsFullyKnown()) return Decline("x's shape is not known at plan time");
  if (init.inputs.size() < 2 || !init.inputs[1].has_value() || init.inputs[1].value->num_elements() != 1 ||
      init.inputs[1].dtype != DType::kFloat32)
    return Decline("y_scale is not a constant float32 scalar");
  const float scale = init.inputs[1].value->data<float>()[0];
  if (!(scale > 0) || !std::isfinite(scale)) return Decline("y_scale is not finite and positive");
  DType out = DType::kUInt8;
  int32_t zp = 0;
  if (node.has_input(2)) {
    const ValueType& z = init.inputs[2];
    if (!z.has_value() || z.value->num_elements() != 1) return Decline("y_zero_point is not a constant scalar");
    out = z.dtype;
    if (out == DType::kUInt8)
      zp = z.value->data<uint8_t>()[0];
    else if (out == DType::kInt8)
      zp = z.value->data<int8_t>()[0];
    else
      return Decline("y_zero_point is not uint8 or int8");
  }
  return std::unique_ptr<Kernel>(std::make_unique<QuantizePerTensor>(init.inputs[0].shape.ToShape(), out, scale, zp));
}

}  // namespace strata::ops::cpu::STRATA_CPU_NS
#include "ops/cpu/isa_end.h"
