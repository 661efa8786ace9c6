// Element types and conversions, checked against plain float arithmetic; the communicator's
// environment settings.
#include "node-runtime/collectives/core/data_type.h"

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
