// Sum of two or more float32 inputs of one shape known at plan time: y = ((x0 + x1) + x2) + ..., elementwise, in the
// reference's order (so bit for bit equal to it), in blocks split across threads.
// Why: the backward pass sums the gradients of every value read twice (residual blocks, swish's x * sigmoid(x),
// squeeze-and-excite); the reference kernel runs one thread through its broadcasting loop, and took 5-7% of an
// EfficientNetV2B0 training step (86 Sums at 224x224, batch 32).
// Under mixed_bfloat16 the inputs and the output may also be bfloat16 gradients (Plan::StoreBf16: a residual block's
// input gradient, the sum of its two branches' gradients): each input is widened exactly, the sum is taken in float32
// in the same order, and a bfloat16 output is that float32 sum rounded to nearest even (cpu/bf16.h).
#include <algorithm>
#include <vector>

#include "core/parallel.h"
#include "ops/bf16_output.h"
#include "ops/cpu/bf16.h"
#include "ops/cpu/cpu_kernels.h"

namespace strata::ops::cpu {
namespace {

constexpr int64_t kBlock = 16384;  // elements per task

// y[j] = a[j] + b[j] for j in [0, n): each float32 or bfloat16 (the sum in float32, rounded when y is bfloat16).
template <typename A, typename B, typename Y>
void Add2(const A* a, const B* b, Y* y, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) StoreF(y, j, LoadF(a, j) + LoadF(b, j));
}

// acc[j] = x[j] (first) or acc[j] += x[j], for j in [0, n), x float32 or bfloat16.
template <typename In>
void Accumulate(const In* x, float* acc, int64_t n, bool first) {
  if (first) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) acc[j] = LoadF(x, j);
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) acc[j] += LoadF(x, j);
  }
}

class SumKernel final : public Kernel, public Bf16InputKernel, public Bf16OutputKernel {
 public:
  SumKernel(Shape shape, std::vector<DType> inputs, DType output)
      : shape_(std::move(shape)), inputs_(std::move(inputs)), output_(output) {}

  std::string_view name() const override { return "cpu"; }
  bool reads_bf16(int input) const override { return input >= 0 && input < static_cast<int>(inputs_.size()); }

  Status Run(KernelContext& ctx) const override {
    std::vector<const void*> in(inputs_.size());
    bool all_f32 = output_ == DType::kFloat32;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor& t = ctx.input(static_cast<int>(i));
      if (t.dtype() != inputs_[i] || t.shape() != shape_)
        return ctx.Error("input ", i, " is ", t.TypeString(), ", not the ", DTypeName(inputs_[i]), shape_.ToString(),
                         " the plan was made for");
      in[i] = t.raw_data();
      all_f32 = all_f32 && inputs_[i] == DType::kFloat32;
    }
    STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, output_, shape_));
    const int64_t n = shape_.NumElements();
    if (all_f32) {
      float* out = y->data<float>();
      ParallelFor((n + kBlock - 1) / kBlock, 1, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          const int64_t lo = b * kBlock, hi = std::min(n, lo + kBlock);
          const auto* x0 = static_cast<const float*>(in[0]);
          const auto* x1 = static_cast<const float*>(in[1]);
          for (int64_t j = lo; j < hi; ++j) out[j] = x0[j] + x1[j];
          for (size_t i = 2; i < in.size(); ++i) {
            const auto* xi = static_cast<const float*>(in[i]);
            for (int64_t j = lo; j < hi; ++j) out[j] += xi[j];
          }
        }
      });
      return Status::OK();
    }
    void* out = y->raw_data();
    if (inputs_.size() == 2) {  // the common case (a residual block's two gradients): one pass
      WithFloatOrBf16(inputs_[0], in[0], [&](const auto* a) {
        WithFloatOrBf16(inputs_[1], in[1], [&](const auto* b) {
          ParallelFor((n + kBlock - 1) / kBlock, 1, [&](int64_t begin, int64_t end) {
            for (int64_t blk = begin; blk < end; ++blk) {
              const int64_t lo = blk * kBlock, len = std::min(n, lo + kBlock) - lo;
              WithFloatOrBf16(output_, out, [&](auto* o) { Add2(a + lo, b + lo, o + lo, len); });
            }
          });
        });
      });
      return Status::OK();
    }
    // Three or more: the float32 sum of a block in a buffer (the output itself when it is float32), in the same
    // order, then rounded into a bfloat16 output.
    ParallelFor((n + kBlock - 1) / kBlock, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> buf(output_ == DType::kFloat32 ? 0 : kBlock);
      for (int64_t b = begin; b < end; ++b) {
        const int64_t lo = b * kBlock, len = std::min(n, lo + kBlock) - lo;
        float* acc = output_ == DType::kFloat32 ? static_cast<float*>(out) + lo : buf.data();
        for (size_t i = 0; i < in.size(); ++i) {
          WithFloatOrBf16(inputs_[i], in[i], [&](const auto* x) { Accumulate(x + lo, acc, len, i == 0); });
        }
        if (output_ == DType::kBFloat16) {
          uint16_t* o = static_cast<uint16_t*>(out) + lo;
#pragma omp simd
          for (int64_t j = 0; j < len; ++j) o[j] = FloatToBf16(acc[j]);
        }
      }
    });
    return Status::OK();
  }

 private:
  Shape shape_;
  std::vector<DType> inputs_;
  DType output_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> CreateSum(const KernelInit& init) {
  if (init.inputs.size() < 2) return UnimplementedError("cpu Sum: needs two or more inputs");
  std::vector<DType> types;
  for (const ValueType& v : init.inputs) {
    if (!IsFloat32OrBf16(v.dtype) || !v.shape.IsFullyKnown())
      return UnimplementedError("cpu Sum: float32 (or bfloat16 gradient) inputs of shapes known at plan time only");
    types.push_back(v.dtype);
  }
  const DType out =
      init.outputs.empty() || init.outputs[0].dtype == DType::kUndefined ? DType::kFloat32 : init.outputs[0].dtype;
  if (!IsFloat32OrBf16(out)) return UnimplementedError("cpu Sum: the output is neither float32 nor bfloat16");
  const Shape shape = init.inputs[0].shape.ToShape();
  for (const ValueType& v : init.inputs)
    if (v.shape.ToShape() != shape) return UnimplementedError("cpu Sum: inputs of one shape only (no broadcasting)");
  return std::unique_ptr<Kernel>(std::make_unique<SumKernel>(shape, std::move(types), out));
}

}  // namespace strata::ops::cpu
