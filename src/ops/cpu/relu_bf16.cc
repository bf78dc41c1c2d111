// Relu and strata.ReluGrad with bfloat16 activations (Plan::StoreBf16, mixed_bfloat16 training): Relu whose X or Y
// (or both) the plan stores in bfloat16, and ReluGrad(dY, Y) whose Y, dY or dX (any of them) it stores so. The
// float32 nodes are the oneDNN kernels' (src/ops/dnnl/eltwise*.cc), which tell the plan that these kernels take the
// bfloat16 variants.
// Why: in a mixed_bfloat16 training graph the Relu between a batch norm and the next convolution is read by that
// convolution's forward and backward-weights kernels, which round it to bfloat16 on the way in, and by ReluGrad,
// which only needs its sign: storing it in bfloat16 halves its memory traffic and saves both conversions, and the
// convolutions see the same values (Relu commutes with rounding to nearest even: relu(bf16(z)) == bf16(relu(z))).
// The arithmetic is the reference's: y = x > 0 ? x : 0 (NaN gives 0), dX = Y > 0 ? dY : 0.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/parallel.h"
#include "ops/bf16_output.h"
#include "ops/cpu/bf16.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/inplace.h"

namespace strata::ops::cpu {
namespace {

constexpr int64_t kBlock = 16384;  // elements per task

Status Decline(std::string_view op, std::string_view why) { return UnimplementedError("cpu ", op, ": ", why); }

// y = x > 0 ? x : 0 over [0, n) (x and y may be the same memory: element i is read before it is written).
template <typename In, typename Out>
void ReluSpan(const In* x, Out* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = LoadF(x, i);
    StoreF(y, i, v > 0.0f ? v : 0.0f);
  }
}
// bfloat16 to bfloat16 on the bits: x > 0 exactly for the bits 0x0001-0x7f80 (positive, not zero, not NaN).
void ReluSpan(const uint16_t* x, uint16_t* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = x[i];
    y[i] = b >= 1 && b <= 0x7f80 ? b : 0;
  }
}

template <typename In, typename Out>
void ReluRows(const In* x, Out* y, int64_t n) {
  ParallelFor((n + kBlock - 1) / kBlock, 1, [x, y, n](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) ReluSpan(x + b * kBlock, y + b * kBlock, std::min(kBlock, n - b * kBlock));
  });
}

// Whether y > 0 (not zero, not negative, not NaN): for bfloat16 on the bits 0x0001-0x7f80, for float32 on the bits
// 0x00000001-0x7f800000.
inline uint32_t PositiveMask(uint16_t b) { return 0u - static_cast<uint32_t>(b >= 1 && b <= 0x7f80); }
inline uint32_t PositiveMask(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof(u));
  return 0u - static_cast<uint32_t>(u >= 1 && u <= 0x7f800000u);
}
// dY's bits as stored (float32 or bfloat16) and dX's from them: masking keeps a bfloat16 dY exact in either type
// (widened to float32: the bits shifted up), and a float32 dY written to bfloat16 is rounded to nearest even.
inline uint32_t GradBits(float g) {
  uint32_t u;
  std::memcpy(&u, &g, sizeof(u));
  return u;
}
inline uint32_t GradBits(uint16_t g) { return static_cast<uint32_t>(g) << 16; }
inline void PutGrad(float* dx, uint32_t bits) { std::memcpy(dx, &bits, sizeof(bits)); }
inline void PutGrad(uint16_t* dx, uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  *dx = FloatToBf16(f);
}

// dx = y > 0 ? dy : 0 on the bits of dy (a NaN dY where y <= 0 gives 0); dY, Y and dX each float32 or bfloat16.
template <typename G, typename Y, typename D>
void ReluGradSpan(const G* dy, const Y* y, D* dx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) PutGrad(dx + i, GradBits(dy[i]) & PositiveMask(y[i]));
}

class ReluBf16Kernel final : public Kernel, public Bf16InputKernel, public Bf16OutputKernel, public InplaceKernel {
 public:
  ReluBf16Kernel(Shape shape, DType x, DType y) : shape_(std::move(shape)), x_(x), y_(y) {}
  std::string_view name() const override { return "cpu"; }
  bool reads_bf16(int input) const override { return input == 0; }
  // In place only between values of one type (the plan checks): each element is read before it is written.
  int inplace_input() const override { return 0; }

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != x_ || x.shape() != shape_)
      return ctx.Error("X is ", x.TypeString(), ", the plan was made for ", DTypeName(x_), shape_.ToString());
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, y_, shape_));
    const int64_t n = shape_.NumElements();
    WithFloatOrBf16(x_, x.raw_data(), [&](const auto* xp) {
      WithFloatOrBf16(y_, y->raw_data(), [&](auto* yp) { ReluRows(xp, yp, n); });
    });
    return Status::OK();
  }

 private:
  Shape shape_;
  DType x_, y_;
};

// ReluGrad(dY, Y) -> dX where at least one of them is a bfloat16 value (Plan::StoreBf16): Y a bfloat16 activation, and
// under mixed_bfloat16 also dY (the output of a bfloat16 backward-data convolution or of another gradient kernel that
// writes bfloat16) and dX (where its readers take bfloat16: the batch-norm gradient, Sum, the convolutions).
class ReluGradBf16Kernel final : public Kernel, public Bf16InputKernel, public Bf16OutputKernel {
 public:
  ReluGradBf16Kernel(Shape shape, DType dy, DType y, DType dx) : shape_(std::move(shape)), dy_(dy), y_(y), dx_(dx) {}
  std::string_view name() const override { return "cpu"; }
  bool reads_bf16(int input) const override { return input == 0 || input == 1; }

  Status Run(KernelContext& ctx) const override {
    const Tensor& dy = ctx.input(0);
    const Tensor& y = ctx.input(1);
    if (dy.dtype() != dy_ || dy.shape() != shape_ || y.dtype() != y_ || y.shape() != shape_)
      return ctx.Error("dY ", dy.TypeString(), ", Y ", y.TypeString(), "; the plan was made for ", DTypeName(dy_),
                       shape_.ToString(), " and ", DTypeName(y_), shape_.ToString());
    STRATA_ASSIGN_OR_RETURN(Tensor * dx, ctx.Output(0, dx_, shape_));
    const int64_t n = shape_.NumElements();
    WithFloatOrBf16(dy_, dy.raw_data(), [&](const auto* g) {
      WithFloatOrBf16(y_, y.raw_data(), [&](const auto* yv) {
        WithFloatOrBf16(dx_, dx->raw_data(), [&](auto* out) {
          ParallelFor((n + kBlock - 1) / kBlock, 1, [g, yv, out, n](int64_t begin, int64_t end) {
            for (int64_t b = begin; b < end; ++b) {
              const int64_t lo = b * kBlock;
              ReluGradSpan(g + lo, yv + lo, out + lo, std::min(kBlock, n - lo));
            }
          });
        });
      });
    });
    return Status::OK();
  }

 private:
  Shape shape_;
  DType dy_, y_, dx_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateReluBf16(const KernelInit& init) {
  constexpr std::string_view op = "Relu";
  if (!init.node.domain.empty() || init.node.op_type != op) return Decline(op, "not Relu");
  if (init.inputs.size() != 1 || init.outputs.size() != 1) return Decline(op, "needs one input and one output");
  const ValueType& x = init.inputs[0];
  const ValueType& y = init.outputs[0];
  if (!IsFloat32OrBf16(x.dtype) || !IsFloat32OrBf16(y.dtype) ||
      (x.dtype != DType::kBFloat16 && y.dtype != DType::kBFloat16))
    return Decline(op, "neither X nor Y is a bfloat16 activation (float32 Relu: the oneDNN kernel's)");
  if (!x.shape.IsFullyKnown()) return Decline(op, "X's shape is not known at plan time");
  return std::unique_ptr<Kernel>(std::make_unique<ReluBf16Kernel>(x.shape.ToShape(), x.dtype, y.dtype));
}

StatusOr<std::unique_ptr<Kernel>> CreateReluGradBf16(const KernelInit& init) {
  constexpr std::string_view op = "ReluGrad";
  if (init.node.domain != "strata" || init.node.op_type != op) return Decline(op, "not strata.ReluGrad");
  if (init.inputs.size() != 2) return Decline(op, "needs dY and Y");
  const ValueType& dy = init.inputs[0];
  const ValueType& y = init.inputs[1];
  const DType dx =
      init.outputs.empty() || init.outputs[0].dtype == DType::kUndefined ? DType::kFloat32 : init.outputs[0].dtype;
  if (!IsFloat32OrBf16(dy.dtype) || !IsFloat32OrBf16(y.dtype) || !IsFloat32OrBf16(dx))
    return Decline(op, "dY, Y and dX must each be float32 or bfloat16");
  if (dy.dtype != DType::kBFloat16 && y.dtype != DType::kBFloat16 && dx != DType::kBFloat16)
    return Decline(op, "no bfloat16 value (float32: the oneDNN kernel's)");
  if (!dy.shape.IsFullyKnown() || !y.shape.IsFullyKnown() || dy.shape.ToShape() != y.shape.ToShape())
    return Decline(op, "dY and Y are not of one shape known at plan time");
  return std::unique_ptr<Kernel>(std::make_unique<ReluGradBf16Kernel>(dy.shape.ToShape(), dy.dtype, y.dtype, dx));
}

}  // namespace strata::ops::cpu
