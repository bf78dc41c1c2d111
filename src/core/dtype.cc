#include <cmath>
#include <cstring>

#include "strata/tensor.h"

namespace strata {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kUndefined: return 0;
    case DType::kFloat32: return 4;
    case DType::kUInt8: return 1;
    case DType::kInt8: return 1;
    case DType::kUInt16: return 2;
    case DType::kInt16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kString: return sizeof(std::string);
    case DType::kBool: return 1;
    case DType::kFloat16: return 2;
    case DType::kFloat64: return 8;
    case DType::kUInt32: return 4;
    case DType::kUInt64: return 8;
    case DType::kBFloat16: return 2;
  }
  return 0;
}

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kUndefined: return "undefined";
    case DType::kFloat32: return "float32";
    case DType::kUInt8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kUInt16: return "uint16";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kString: return "string";
    case DType::kBool: return "bool";
    case DType::kFloat16: return "float16";
    case DType::kFloat64: return "float64";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kBFloat16: return "bfloat16";
  }
  return "undefined";
}

StatusOr<DType> DTypeFromName(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType type;
  };
  static constexpr Alias kAliases[] = {
      {"float32", DType::kFloat32}, {"float", DType::kFloat32},     {"uint8", DType::kUInt8},
      {"int8", DType::kInt8},       {"uint16", DType::kUInt16},     {"int16", DType::kInt16},
      {"int32", DType::kInt32},     {"int64", DType::kInt64},       {"string", DType::kString},
      {"bool", DType::kBool},       {"float16", DType::kFloat16},   {"half", DType::kFloat16},
      {"float64", DType::kFloat64}, {"double", DType::kFloat64},    {"uint32", DType::kUInt32},
      {"uint64", DType::kUInt64},   {"bfloat16", DType::kBFloat16},
  };
  for (const auto& a : kAliases)
    if (a.name == name) return a.type;
  return InvalidArgumentError("unknown element type '", name,
                              "'; expected one of float32, float64, float16, bfloat16, int8, uint8, int16, uint16, "
                              "int32, uint32, int64, uint64, bool, string");
}

StatusOr<DType> DTypeFromOnnx(int onnx_type) {
  switch (onnx_type) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 12: case 13:
    case 16:
      return static_cast<DType>(onnx_type);
    case 14: return UnimplementedError("element type complex64 (ONNX type 14) is not supported");
    case 15: return UnimplementedError("element type complex128 (ONNX type 15) is not supported");
    default: return InvalidArgumentError("unknown ONNX element type number ", onnx_type);
  }
}

bool IsFloatingPoint(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16;
}

bool IsSignedInteger(DType t) {
  return t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64;
}

bool IsInteger(DType t) {
  return IsSignedInteger(t) || t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kUInt32 ||
         t == DType::kUInt64;
}

// float -> half with round-to-nearest-even, handling subnormals, overflow to inf and NaN.
Float16::Float16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    bits = static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    return;
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    // Shift so that the value is expressed in units of 2^-24, rounding to nearest even.
    const int e = static_cast<int>(abs >> 23);
    if (e < 102) {  // < 2^-25: rounds to zero
      bits = static_cast<uint16_t>(sign);
      return;
    }
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - e;  // 14 + 23 - (e - 127) - 24 ... = number of bits to drop
    const uint32_t halfway = 1u << (shift - 1);
    const uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t q = mant >> shift;
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    bits = static_cast<uint16_t>(sign | q);
    return;
  }
  // normal: rebias exponent 127 -> 15 and round the 13 dropped bits to nearest even.
  uint32_t v = abs - (112u << 23);
  const uint32_t rem = v & 0x1fffu;
  uint32_t q = v >> 13;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;
  bits = static_cast<uint16_t>(sign | q);
}

Float16::operator float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {  // subnormal: value = mant * 2^-24
      float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
      std::memcpy(&out, &f, 4);
      out |= sign;
    }
  } else if (exp == 31) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

BFloat16::BFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it a quiet NaN
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);
    return;
  }
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  bits = static_cast<uint16_t>(x >> 16);
}

}  // namespace strata
