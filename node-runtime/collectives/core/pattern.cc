#include "node-runtime/collectives/core/pattern.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace torus::coll {
namespace {

template <typename T>
void storeAs(std::byte* dst, T value) {
  std::memcpy(dst, &value, sizeof(T));
}

double loadElement(const std::byte* src, DataType type) {
  switch (type) {
    case DataType::kF32: {
      float v;
      std::memcpy(&v, src, 4);
      return v;
    }
    case DataType::kF64: {
      double v;
      std::memcpy(&v, src, 8);
      return v;
    }
    case DataType::kF16:
    case DataType::kBf16: {
      unsigned short v;
      std::memcpy(&v, src, 2);
      return type == DataType::kF16 ? halfToFloat(v) : bf16ToFloat(v);
    }
    case DataType::kI8:
      return static_cast<double>(static_cast<std::int8_t>(src[0]));
    case DataType::kU8:
      return static_cast<double>(static_cast<std::uint8_t>(src[0]));
    case DataType::kI32: {
      std::int32_t v;
      std::memcpy(&v, src, 4);
      return v;
    }
    case DataType::kI64: {
      std::int64_t v;
      std::memcpy(&v, src, 8);
      return static_cast<double>(v);
    }
  }
  return 0;
}

}  // namespace

double patternValue(int rank, std::size_t index, DataType type, ReduceOp op) {
  const auto base = static_cast<int>((static_cast<std::size_t>(rank) * 7 + index * 13 + 3) % 5);
  if (op == ReduceOp::kProd) return 1 + base % 3;
  if (type == DataType::kU8) return base;
  return base - 2;
}

double expectedReduction(int size, std::size_t index, DataType type, ReduceOp op) {
  double acc = patternValue(0, index, type, op);
  for (int r = 1; r < size; ++r) {
    const double v = patternValue(r, index, type, op);
    switch (op) {
      case ReduceOp::kSum:
        acc += v;
        break;
      case ReduceOp::kProd:
        acc *= v;
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
    }
  }
  return acc;
}

void storeElement(std::byte* dst, DataType type, double value) {
  switch (type) {
    case DataType::kF32:
      return storeAs(dst, static_cast<float>(value));
    case DataType::kF64:
      return storeAs(dst, value);
    case DataType::kF16:
      return storeAs(dst, floatToHalf(static_cast<float>(value)));
    case DataType::kBf16:
      return storeAs(dst, floatToBf16(static_cast<float>(value)));
    case DataType::kI8:
      return storeAs(dst, static_cast<std::int8_t>(static_cast<std::int64_t>(value)));
    case DataType::kU8:
      return storeAs(dst, static_cast<std::uint8_t>(static_cast<std::int64_t>(value)));
    case DataType::kI32:
      return storeAs(dst, static_cast<std::int32_t>(static_cast<std::int64_t>(value)));
    case DataType::kI64:
      return storeAs(dst, static_cast<std::int64_t>(value));
  }
}

void fillPattern(std::span<std::byte> out, DataType type, ReduceOp op, int rank,
                 std::size_t firstIndex) {
  const std::size_t elem = dataTypeSize(type);
  for (std::size_t k = 0; k * elem < out.size(); ++k) {
    storeElement(out.data() + k * elem, type, patternValue(rank, firstIndex + k, type, op));
  }
}

std::string describeMismatch(std::size_t index, DataType type, const std::byte* actual,
                             const std::byte* expected) {
  return "element " + std::to_string(index) + " (" + std::string(dataTypeName(type)) + ") is " +
         std::to_string(loadElement(actual, type)) + ", expected " +
         std::to_string(loadElement(expected, type));
}

}  // namespace torus::coll
