#include "node-runtime/collectives/core/data_type.h"

#include <bit>
#include <cstdint>
#include <string>

namespace torus::coll {

std::size_t dataTypeSize(DataType type) {
  switch (type) {
    case DataType::kF32:
    case DataType::kI32:
      return 4;
    case DataType::kF64:
    case DataType::kI64:
      return 8;
    case DataType::kF16:
    case DataType::kBf16:
      return 2;
    case DataType::kI8:
    case DataType::kU8:
      return 1;
  }
  return 1;
}

std::string_view dataTypeName(DataType type) {
  switch (type) {
    case DataType::kF32:
      return "f32";
    case DataType::kF64:
      return "f64";
    case DataType::kF16:
      return "f16";
    case DataType::kBf16:
      return "bf16";
    case DataType::kI8:
      return "i8";
    case DataType::kU8:
      return "u8";
    case DataType::kI32:
      return "i32";
    case DataType::kI64:
      return "i64";
  }
  return "?";
}

std::string_view reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

Result<DataType> parseDataType(std::string_view text) {
  for (DataType type : kAllDataTypes) {
    if (dataTypeName(type) == text) return type;
  }
  return makeError(ErrorCode::kInvalidArgument,
                   "unknown data type \"" + std::string(text) +
                       "\" (expected f32, f64, f16, bf16, i8, u8, i32 or i64)");
}

Result<ReduceOp> parseReduceOp(std::string_view text) {
  for (ReduceOp op : kAllReduceOps) {
    if (reduceOpName(op) == text) return op;
  }
  return makeError(ErrorCode::kInvalidArgument, "unknown reduction \"" + std::string(text) +
                                                    "\" (expected sum, prod, max or min)");
}

float halfToFloat(unsigned short bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000U) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1FU;
  std::uint32_t mantissa = bits & 0x3FFU;
  std::uint32_t out = 0;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000U | (mantissa << 13);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa != 0) {
    // Subnormal half: normalise into a float.
    exponent = 113;
    while ((mantissa & 0x400U) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    out = sign | (exponent << 23) | ((mantissa & 0x3FFU) << 13);
  } else {
    out = sign;
  }
  return std::bit_cast<float>(out);
}

unsigned short floatToHalf(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000U;
  const std::uint32_t absBits = bits & 0x7FFFFFFFU;
  if (absBits >= 0x7F800000U) {  // inf or NaN
    const std::uint32_t nan = absBits > 0x7F800000U ? 0x200U : 0;
    return static_cast<unsigned short>(sign | 0x7C00U | nan);
  }
  if (absBits >= 0x477FF000U) return static_cast<unsigned short>(sign | 0x7C00U);  // overflow
  if (absBits < 0x38800000U) {
    // Result is subnormal or zero: shift the mantissa (with its hidden bit) into place.
    if (absBits < 0x33000000U) return static_cast<unsigned short>(sign);
    const std::uint32_t exponent = absBits >> 23;
    const std::uint32_t mantissa = (absBits & 0x7FFFFFU) | 0x800000U;
    const std::uint32_t shift = 126 - exponent;  // 14..24
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1U << shift) - 1);
    const std::uint32_t halfway = 1U << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1U))) ++half;
    return static_cast<unsigned short>(sign | half);
  }
  std::uint32_t half = ((absBits - 0x38000000U) >> 13);
  const std::uint32_t rest = absBits & 0x1FFFU;
  if (rest > 0x1000U || (rest == 0x1000U && (half & 1U))) ++half;  // may carry into inf: right
  return static_cast<unsigned short>(sign | half);
}

float bf16ToFloat(unsigned short bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

unsigned short floatToBf16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7FFFFFFFU) > 0x7F800000U) return static_cast<unsigned short>((bits >> 16) | 0x40U);
  const std::uint32_t rounding = 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<unsigned short>((bits + rounding) >> 16);
}

}  // namespace torus::coll
