// DataType and ReduceOp: the element types and reductions the collectives understand, with their
// names as flags and error messages spell them ("f32", "sum").
//
// Owns: sizes, names and parsing. Does not own: the arithmetic (reduce_kernels.h).
#pragma once

#include <cstddef>
#include <string_view>

#include "common/base/result.h"

namespace torus::coll {

enum class DataType { kF32, kF64, kF16, kBf16, kI8, kU8, kI32, kI64 };
enum class ReduceOp { kSum, kProd, kMax, kMin };

inline constexpr DataType kAllDataTypes[] = {DataType::kF32,  DataType::kF64, DataType::kF16,
                                             DataType::kBf16, DataType::kI8,  DataType::kU8,
                                             DataType::kI32,  DataType::kI64};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax,
                                             ReduceOp::kMin};

std::size_t dataTypeSize(DataType type);
std::string_view dataTypeName(DataType type);
std::string_view reduceOpName(ReduceOp op);
Result<DataType> parseDataType(std::string_view text);
Result<ReduceOp> parseReduceOp(std::string_view text);

// IEEE binary16 and bfloat16 <-> float, round to nearest even (NaN stays NaN).
float halfToFloat(unsigned short bits);
unsigned short floatToHalf(float value);
float bf16ToFloat(unsigned short bits);
unsigned short floatToBf16(float value);

}  // namespace torus::coll
