// Cast (opset 6/9/13; attribute `to`, an onnx.TensorProto.DataType number) and CastLike (opset 15; the target type is
// the type of input 1). Shape is kept; every pair of numeric, bool, float16, bfloat16 and string types converts:
//   float -> integer truncates toward zero; NaN gives 0 and out-of-range values saturate (C++ leaves both undefined);
//   float64 -> float16 rounds once to nearest even (via round-to-odd float32, so there is no double rounding);
//   -> bfloat16 truncates the float32 bits (NaN stays a quiet NaN): ONNX 1.12's conformance data for opsets <= 17
//      encodes truncation, and the spec of those opsets does not say otherwise (onnx/onnx#3876);
//   numeric -> string prints as numpy's str() does (number_text.h); bool -> "True"/"False";
//   string -> numeric parses decimal/scientific text and "NaN"/"INF"/"+INF"/"-INF" in any case; text such as "100.5"
//      converted to an integer type is truncated, as the spec allows; unparsable text is InvalidArgument.
// The opset 19 `saturate` attribute concerns float8 types only and is ignored.
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/defs/math/elementwise_kernels.h"
#include "ops/defs/math/number_text.h"
#include "ops/grad_util.h"

namespace strata::ops {
namespace {

// double -> float rounding toward zero.
float DoubleToFloatTrunc(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return f;
}

// double -> float with round-to-odd: rounding that result again to a narrower type (float16) equals rounding d
// directly.
float DoubleToFloatOdd(double d) {
  float f = DoubleToFloatTrunc(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}

BFloat16 TruncateToBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t top = static_cast<uint16_t>(bits >> 16);
  if (std::isnan(f)) top |= 0x40u;  // a NaN whose payload sat in the low bits must stay a NaN
  return BFloat16::FromBits(top);
}

template <typename D>
Status ParseInto(const std::string& s, D* out) {
  if constexpr (std::is_same_v<D, float>) {
    STRATA_ASSIGN_OR_RETURN(*out, ew::ParseFloat(s));
  } else if constexpr (std::is_same_v<D, double>) {
    STRATA_ASSIGN_OR_RETURN(*out, ew::ParseDouble(s));
  } else if constexpr (std::is_same_v<D, Float16>) {
    STRATA_ASSIGN_OR_RETURN(double d, ew::ParseDouble(s));
    *out = Float16(DoubleToFloatOdd(d));
  } else if constexpr (std::is_same_v<D, BFloat16>) {
    STRATA_ASSIGN_OR_RETURN(double d, ew::ParseDouble(s));
    *out = TruncateToBFloat16(DoubleToFloatTrunc(d));
  } else if constexpr (std::is_same_v<D, bool>) {
    STRATA_ASSIGN_OR_RETURN(*out, ew::ParseBool(s));
  } else if constexpr (std::is_signed_v<D>) {
    STRATA_ASSIGN_OR_RETURN(int64_t v, ew::ParseInt64(s, std::numeric_limits<D>::lowest(), std::numeric_limits<D>::max()));
    *out = static_cast<D>(v);
  } else {
    STRATA_ASSIGN_OR_RETURN(uint64_t v, ew::ParseUInt64(s, std::numeric_limits<D>::max()));
    *out = static_cast<D>(v);
  }
  return Status::OK();
}

Status FromString(KernelContext& ctx, const Tensor& x, Tensor* y) {
  const std::string* in = x.data<std::string>();
  const int64_t n = x.num_elements();
  return DispatchAll(y->dtype(), [&](auto tag) -> Status {
    using D = typename decltype(tag)::type;
    D* out = y->data<D>();
    if constexpr (std::is_same_v<D, std::string>) {
      for (int64_t i = 0; i < n; ++i) out[i] = in[i];
    } else {
      for (int64_t i = 0; i < n; ++i) {
        Status s = ParseInto<D>(in[i], &out[i]);
        if (!s.ok()) return Status(s.code(), StrCat(ctx.node().Describe(), ": element ", i, ": ", s.message()));
      }
    }
    return Status::OK();
  });
}

Status ToString(const Tensor& x, Tensor* y) {
  std::string* out = y->data<std::string>();
  const int64_t n = x.num_elements();
  if (x.dtype() == DType::kBool) {
    const bool* in = x.data<bool>();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] ? "True" : "False";
    return Status::OK();
  }
  return DispatchNumeric(x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeType<S>;
    const S* in = x.data<S>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<C>) {
        out[i] = ew::FormatFloat(static_cast<double>(static_cast<C>(in[i])), x.dtype());
      } else {
        out[i] = StrCat(in[i]);
      }
    }
    return Status::OK();
  });
}

Status NumericCast(const Tensor& x, Tensor* y) {
  const int64_t n = x.num_elements();
  if (y->dtype() == DType::kBFloat16 && IsFloatingPoint(x.dtype())) {
    BFloat16* out = y->data<BFloat16>();
    return DispatchFloat(x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* in = x.data<S>();
      for (int64_t i = 0; i < n; ++i)
        out[i] = TruncateToBFloat16(DoubleToFloatTrunc(static_cast<double>(static_cast<ComputeType<S>>(in[i]))));
      return Status::OK();
    });
  }
  if (y->dtype() == DType::kFloat16 && x.dtype() == DType::kFloat64) {
    const double* in = x.data<double>();
    Float16* out = y->data<Float16>();
    for (int64_t i = 0; i < n; ++i) out[i] = Float16(DoubleToFloatOdd(in[i]));
    return Status::OK();
  }
  return ConvertElements(x, y);
}

Status CastTo(KernelContext& ctx, DType to) {
  const Tensor& x = ctx.input(0);
  STRATA_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, to, x.shape()));
  if (x.dtype() == to) {
    y->CopyFrom(x);
    return Status::OK();
  }
  if (x.dtype() == DType::kString) return FromString(ctx, x, y);
  if (to == DType::kString) return ToString(x, y);
  return NumericCast(x, y);
}

StatusOr<DType> TargetType(const Node& node) {
  STRATA_ASSIGN_OR_RETURN(int64_t to, node.RequireInt("to"));
  auto t = DTypeFromOnnx(static_cast<int>(to));
  if (!t.ok()) return Status(t.status()).WithContext(StrCat(node.Describe(), ": attribute to"));
  return *t;
}

Status CastCompute(KernelContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType to, TargetType(ctx.node()));
  return CastTo(ctx, to);
}

Status CastLikeCompute(KernelContext& ctx) { return CastTo(ctx, ctx.input(1).dtype()); }

Status InferCast(InferContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(DType to, TargetType(ctx.node()));
  ctx.SetOutput(0, to, ctx.input_shape(0));
  return Status::OK();
}

Status InferCastLike(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input_dtype(1), ctx.input_shape(0));
  return Status::OK();
}

// Between float types the gradient is cast back to the input's type. (Only float inputs are differentiated, and a
// cast to a non-float type passes no gradient on.)
Status CastGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, Emit1(ctx, "CastLike", {ctx.output_grad(0), In(ctx, 0)}));
  return Status::OK();
}

}  // namespace

void RegisterCast(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("Cast", 6, 1, 1, InferCast, CastCompute), CastGrad));
}
void RegisterCastLike(OpRegistry* r) {
  r->Add(WithGrad(ew::MakeSchema("CastLike", 15, 2, 2, InferCastLike, CastLikeCompute), CastGrad));
}

}  // namespace strata::ops
