// Deterministic test data for collectives: what rank r puts at element i, and what a reduction
// over all ranks must give there. Used by neuron-cc-bench --check and by the tests.
//
// Values are small integers (-2..4, products of at most 8 values in 1..3) so every data type
// holds them exactly and every reduction order gives the same bits; the expected value is
// computed in double, independently of reduce_kernels, then rounded once to the element type
// (integers wrap modulo 2^bits, as the kernels promise).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "node-runtime/collectives/core/data_type.h"

namespace torus::coll {

double patternValue(int rank, std::size_t index, DataType type, ReduceOp op);
double expectedReduction(int size, std::size_t index, DataType type, ReduceOp op);

// Stores `value` as one element of `type` at dst.
void storeElement(std::byte* dst, DataType type, double value);

// out[k] = patternValue(rank, firstIndex + k) for every element of out.
void fillPattern(std::span<std::byte> out, DataType type, ReduceOp op, int rank,
                 std::size_t firstIndex);

// "" when `actual` (count elements) equals expected(firstIndex + k) element by element, else a
// description of the first difference.
template <typename Expected>
std::string compareElements(std::span<const std::byte> actual, DataType type, Expected expected);

std::string describeMismatch(std::size_t index, DataType type, const std::byte* actual,
                             const std::byte* expected);

template <typename Expected>
std::string compareElements(std::span<const std::byte> actual, DataType type, Expected expected) {
  const std::size_t elem = dataTypeSize(type);
  std::byte want[8];
  for (std::size_t k = 0; k * elem < actual.size(); ++k) {
    storeElement(want, type, expected(k));
    for (std::size_t b = 0; b < elem; ++b) {
      if (actual[k * elem + b] != want[b]) {
        return describeMismatch(k, type, actual.data() + k * elem, want);
      }
    }
  }
  return {};
}

}  // namespace torus::coll
