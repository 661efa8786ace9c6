// Element conversions and reduction kernels, checked against plain float/double arithmetic.
#include "node-runtime/collectives/data_type.h"

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "node-runtime/collectives/communicator.h"
#include "node-runtime/collectives/reduce_kernels.h"

namespace torus::coll {
namespace {

TEST(DataType, NamesRoundTripAndUnknownNamesAreRejected) {
  for (DataType type : kAllDataTypes) {
    auto parsed = parseDataType(dataTypeName(type));
    ASSERT_TRUE(parsed.ok()) << dataTypeName(type);
    EXPECT_EQ(*parsed, type);
  }
  for (ReduceOp op : kAllReduceOps)
    EXPECT_EQ(*parseReduceOp(reduceOpName(op)), op);
  EXPECT_FALSE(parseDataType("float32").ok());
  EXPECT_NE(parseReduceOp("avg").error().message.find("avg"), std::string::npos);
}

// Every finite half converts to a float and back to the same bits.
TEST(HalfFloat, EveryFiniteValueRoundTrips) {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto half = static_cast<unsigned short>(bits);
    if ((half & 0x7C00U) == 0x7C00U) continue;  // inf / NaN
    EXPECT_EQ(floatToHalf(halfToFloat(half)), half) << std::hex << bits;
  }
}

TEST(HalfFloat, KnownValuesAndRoundingToNearestEven) {
  EXPECT_EQ(halfToFloat(0x3C00), 1.0F);
  EXPECT_EQ(halfToFloat(0xC000), -2.0F);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0F);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0F, -24));             // smallest subnormal
  EXPECT_EQ(floatToHalf(1.0F + std::ldexp(1.0F, -11)), 0x3C00);      // tie -> even (down)
  EXPECT_EQ(floatToHalf(1.0F + 3 * std::ldexp(1.0F, -11)), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(floatToHalf(70000.0F), 0x7C00);                          // overflow -> inf
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(floatToHalf(std::ldexp(1.0F, -26)), 0x0000);  // below half the smallest subnormal
}

TEST(Bfloat16, KeepsTheTopBitsAndRoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0F), 0x3F80);
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0F);
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x3F808000U)), 0x3F80);  // tie -> even (down)
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x3F818000U)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x3F808001U)), 0x3F81);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::numeric_limits<float>::quiet_NaN()))));
}

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

}  // namespace
}  // namespace torus::coll

namespace torus::coll {
namespace {

// NEURON_RT_ROOT_COMM_ID and TORUS_COLL_TIMEOUT_MS are read once, at creation, when set.
TEST(CommOptions, EnvironmentSetsRootAddressAndTimeoutAndRejectsBadValues) {
  ::setenv("NEURON_RT_ROOT_COMM_ID", "10.1.2.3:62182", 1);
  ::setenv("TORUS_COLL_TIMEOUT_MS", "2500", 1);
  ::setenv("TORUS_COLL_ALGO", "direct", 1);
  CommOptions options;
  ASSERT_TRUE(applyEnvironment(options).ok());
  EXPECT_EQ(options.algorithm, Algorithm::kDirect);
  EXPECT_EQ(options.rootAddress, "10.1.2.3:62182");
  EXPECT_EQ(options.timeout, std::chrono::milliseconds(2500));
  ::setenv("TORUS_COLL_TIMEOUT_MS", "soon", 1);
  auto bad = applyEnvironment(options);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("TORUS_COLL_TIMEOUT_MS"), std::string::npos);
  ::setenv("TORUS_COLL_ALGO", "ring", 1);
  EXPECT_FALSE(applyEnvironment(options).ok());
  ::unsetenv("TORUS_COLL_ALGO");
  ::unsetenv("NEURON_RT_ROOT_COMM_ID");
  ::unsetenv("TORUS_COLL_TIMEOUT_MS");
  ::setenv("TORUS_COLL_OFI_REGISTER", "always", 1);
  ASSERT_TRUE(applyEnvironment(options).ok());
  EXPECT_TRUE(options.ofiRegisterAlways);
  ::setenv("TORUS_COLL_OFI_REGISTER", "sometimes", 1);
  auto badRegister = applyEnvironment(options);
  ASSERT_FALSE(badRegister.ok());
  EXPECT_NE(badRegister.error().message.find("TORUS_COLL_OFI_REGISTER"), std::string::npos);
  ::unsetenv("TORUS_COLL_OFI_REGISTER");
  CommOptions defaults;
  ASSERT_TRUE(applyEnvironment(defaults).ok());
  EXPECT_EQ(defaults.timeout, kDefaultTimeout);
  EXPECT_EQ(kDefaultTimeout, std::chrono::minutes(5));
}

// The environment table is the one declaration: docs/config.md lists every variable it reads.
TEST(CommOptions, EveryEnvironmentVariableIsDocumented) {
  std::ifstream file(std::string(TORUS_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(file.good());
  const std::string docs((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const auto names = environmentVariables();
  EXPECT_EQ(names.size(), 7u);
  for (const std::string_view name : names) {
    EXPECT_NE(docs.find("| `" + std::string(name) + "` |"), std::string::npos)
        << name << " is read by applyEnvironment but not in docs/config.md";
  }
}

}  // namespace
}  // namespace torus::coll
