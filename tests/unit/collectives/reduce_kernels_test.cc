// The reduction kernels, checked against plain scalar arithmetic: wrapping integers, NaN-free
// float max/min, f16/bf16 rounding once, many sources and outputs, results in place, streamed
// outputs on and off a 16-byte boundary, and every length around a 64-byte line.
#include "node-runtime/collectives/core/reduce_kernels.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

namespace torus::coll {
namespace {

template <typename T>
std::vector<T> reduceVectors(const std::vector<std::vector<T>>& inputs, DataType type,
                             ReduceOp op) {
  std::vector<T> out(inputs[0].size());
  std::vector<const std::byte*> sources;
  for (const auto& in : inputs)
    sources.push_back(reinterpret_cast<const std::byte*>(in.data()));
  reduceInto(out.data(), sources, out.size(), type, op);
  return out;
}

TEST(ReduceKernels, IntegerSumAndProductWrapLikeTwosComplement) {
  const std::vector<std::vector<std::int8_t>> in = {{100, -128, 3}, {100, -1, -3}};
  EXPECT_EQ(reduceVectors(in, DataType::kI8, ReduceOp::kSum),
            (std::vector<std::int8_t>{-56, 127, 0}));
  EXPECT_EQ(reduceVectors(in, DataType::kI8, ReduceOp::kProd),
            (std::vector<std::int8_t>{16, -128, -9}));
  const std::vector<std::vector<std::int32_t>> big = {{INT32_MAX}, {1}};
  EXPECT_EQ(reduceVectors(big, DataType::kI32, ReduceOp::kSum)[0], INT32_MIN);
  const std::vector<std::vector<std::uint8_t>> bytes = {{200, 7}, {100, 9}};
  EXPECT_EQ(reduceVectors(bytes, DataType::kU8, ReduceOp::kSum),
            (std::vector<std::uint8_t>{44, 16}));
  EXPECT_EQ(reduceVectors(bytes, DataType::kU8, ReduceOp::kMin),
            (std::vector<std::uint8_t>{100, 7}));
}

TEST(ReduceKernels, FloatMaxMinAndManySources) {
  const std::vector<std::vector<double>> in = {{1, -5, 2}, {3, -7, 2}, {-1, 0, 8}, {2, 1, -9}};
  EXPECT_EQ(reduceVectors(in, DataType::kF64, ReduceOp::kMax), (std::vector<double>{3, 1, 8}));
  EXPECT_EQ(reduceVectors(in, DataType::kF64, ReduceOp::kMin), (std::vector<double>{-1, -7, -9}));
  EXPECT_EQ(reduceVectors(in, DataType::kF64, ReduceOp::kSum), (std::vector<double>{5, -11, 3}));
  EXPECT_EQ(reduceVectors(in, DataType::kF64, ReduceOp::kProd), (std::vector<double>{-6, 0, -288}));
}

// f16 and bf16 widen to float and round once: 2048 + 1 + 1 is 2050 in f16 although 2048 + 1
// alone rounds back to 2048.
TEST(ReduceKernels, HalfPrecisionRoundsOncePerElement) {
  const auto h = [](float v) { return floatToHalf(v); };
  const std::vector<std::vector<unsigned short>> in = {{h(2048)}, {h(1)}, {h(1)}};
  EXPECT_EQ(halfToFloat(reduceVectors(in, DataType::kF16, ReduceOp::kSum)[0]), 2050.0F);
  const std::vector<std::vector<unsigned short>> bf = {{floatToBf16(1.5F)}, {floatToBf16(-4)}};
  EXPECT_EQ(bf16ToFloat(reduceVectors(bf, DataType::kBf16, ReduceOp::kProd)[0]), -6.0F);
  EXPECT_EQ(bf16ToFloat(reduceVectors(bf, DataType::kBf16, ReduceOp::kMax)[0]), 1.5F);
}

TEST(ReduceKernels, OneSourceIsACopyAndZeroCountTouchesNothing) {
  const std::vector<std::vector<std::int64_t>> in = {{7, -8, 9}};
  EXPECT_EQ(reduceVectors(in, DataType::kI64, ReduceOp::kProd),
            (std::vector<std::int64_t>{7, -8, 9}));
  std::int64_t untouched = 42;
  const std::byte* src = reinterpret_cast<const std::byte*>(in[0].data());
  reduceInto(&untouched, std::span(&src, 1), 0, DataType::kI64, ReduceOp::kSum);
  EXPECT_EQ(untouched, 42);
}

// The scalar definition of every (type, op): what the vectorised lines must reproduce bit for bit.
template <typename T>
T referenceOp(T a, T b, ReduceOp op) {
  using Wide = std::conditional_t<std::is_integral_v<T>, std::uint64_t, T>;
  switch (op) {
    case ReduceOp::kSum:
      return static_cast<T>(static_cast<Wide>(a) + static_cast<Wide>(b));
    case ReduceOp::kProd:
      return static_cast<T>(static_cast<Wide>(a) * static_cast<Wide>(b));
    case ReduceOp::kMax:
      return a < b ? b : a;
    case ReduceOp::kMin:
      return b < a ? b : a;
  }
  return a;
}

template <typename T>
std::vector<T> randomValues(std::size_t n, std::mt19937& random) {
  std::vector<T> values(n);
  for (auto& v : values) {
    if constexpr (std::is_integral_v<T>) {
      v = static_cast<T>(random());
    } else {
      v = static_cast<T>(std::uniform_real_distribution<double>(-8, 8)(random));
    }
  }
  return values;
}

template <typename T>
void expectEveryLengthMatchesReference(DataType type) {
  std::mt19937 random(7);
  for (const ReduceOp op : kAllReduceOps) {
    for (const std::size_t count : {1UL, 3UL, 15UL, 16UL, 17UL, 64UL, 100UL, 1000UL}) {
      for (const int sources : {1, 2, 3, 5}) {
        std::vector<std::vector<T>> inputs;
        std::vector<const std::byte*> views;
        for (int k = 0; k < sources; ++k) {
          inputs.push_back(randomValues<T>(count, random));
          views.push_back(reinterpret_cast<const std::byte*>(inputs.back().data()));
        }
        std::vector<T> expected = inputs[0];
        for (int k = 1; k < sources; ++k)
          for (std::size_t i = 0; i < count; ++i)
            expected[i] = referenceOp(expected[i], inputs[static_cast<std::size_t>(k)][i], op);
        for (const bool streaming : {false, true}) {
          std::vector<T> first(count), second(count);
          std::byte* outputs[2] = {reinterpret_cast<std::byte*>(first.data()),
                                   reinterpret_cast<std::byte*>(second.data())};
          reduceToOutputs(outputs, views, count, type, op, streaming);
          ASSERT_EQ(std::memcmp(first.data(), expected.data(), count * sizeof(T)), 0)
              << dataTypeName(type) << " " << reduceOpName(op) << " count " << count << " sources "
              << sources << " streaming " << streaming;
          ASSERT_EQ(first, second);
        }
      }
    }
  }
}

TEST(ReduceKernels, EveryTypeOpAndLengthMatchesScalarArithmetic) {
  expectEveryLengthMatchesReference<float>(DataType::kF32);
  expectEveryLengthMatchesReference<double>(DataType::kF64);
  expectEveryLengthMatchesReference<std::int8_t>(DataType::kI8);
  expectEveryLengthMatchesReference<std::uint8_t>(DataType::kU8);
  expectEveryLengthMatchesReference<std::int32_t>(DataType::kI32);
  expectEveryLengthMatchesReference<std::int64_t>(DataType::kI64);
}

// AllReduce in place: each rank's output is its own input at the same address; both must end up
// with the sum, although the first output written is also the first source read.
TEST(ReduceKernels, OutputsMayBeTheirOwnSources) {
  std::vector<float> a(1000), b(1000);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5F * static_cast<float>(i);
  }
  const std::byte* sources[2] = {reinterpret_cast<const std::byte*>(a.data()),
                                 reinterpret_cast<const std::byte*>(b.data())};
  std::byte* outputs[2] = {reinterpret_cast<std::byte*>(a.data()),
                           reinterpret_cast<std::byte*>(b.data())};
  reduceToOutputs(outputs, sources, a.size(), DataType::kF32, ReduceOp::kSum, true);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i], 1.5F * static_cast<float>(i)) << i;
    ASSERT_EQ(b[i], a[i]) << i;
  }
}

// Streaming needs a 16-byte boundary; an output off it (user buffers can be anywhere) must get
// the same result through ordinary stores, and nothing outside the output may change.
TEST(ReduceKernels, StreamedOutputsOffA16ByteBoundaryAreStillExact) {
  constexpr std::size_t kCount = 333;
  std::vector<std::int32_t> x(kCount), y(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    x[i] = static_cast<std::int32_t>(i * 3);
    y[i] = -static_cast<std::int32_t>(i);
  }
  const std::byte* sources[2] = {reinterpret_cast<const std::byte*>(x.data()),
                                 reinterpret_cast<const std::byte*>(y.data())};
  for (const std::size_t shift : {0UL, 4UL, 8UL, 12UL}) {
    std::vector<std::byte> arena(kCount * sizeof(std::int32_t) + 64, std::byte{0x5A});
    auto base = reinterpret_cast<std::uintptr_t>(arena.data());
    const std::size_t lead = ((16 - base % 16) % 16) + shift;
    std::byte* output = arena.data() + lead;
    reduceToOutputs(std::span(&output, 1), sources, kCount, DataType::kI32, ReduceOp::kSum, true);
    for (std::size_t i = 0; i < kCount; ++i) {
      std::int32_t got = 0;
      std::memcpy(&got, output + i * sizeof got, sizeof got);
      ASSERT_EQ(got, static_cast<std::int32_t>(2 * i)) << "shift " << shift << " element " << i;
    }
    for (std::size_t i = 0; i < lead; ++i)
      ASSERT_EQ(arena[i], std::byte{0x5A}) << "byte before the output, shift " << shift;
    for (std::size_t i = lead + kCount * sizeof(std::int32_t); i < arena.size(); ++i)
      ASSERT_EQ(arena[i], std::byte{0x5A}) << "byte after the output, shift " << shift;
  }
}

}  // namespace
}  // namespace torus::coll
