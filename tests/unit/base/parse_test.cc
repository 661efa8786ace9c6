#include "common/base/parse.h"

#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace torus {
namespace {

struct IntCase {
  const char* description;
  std::string text;
  bool ok;
  std::int64_t value;
};

class ParseInt64Test : public ::testing::TestWithParam<IntCase> {};

TEST_P(ParseInt64Test, AcceptsOnlyDecimalsInRange) {
  const IntCase& c = GetParam();
  auto result = parseInt64(c.text, -100, 1'000'000);
  ASSERT_EQ(result.ok(), c.ok) << c.description;
  if (c.ok) {
    EXPECT_EQ(*result, c.value);
  } else {
    EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(result.error().message.find("expected integer"), std::string::npos)
        << result.error().message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseInt64Test,
    ::testing::Values(IntCase{"plain", "42", true, 42}, IntCase{"sysfs newline", "8\n", true, 8},
                      IntCase{"surrounding spaces", "  7  ", true, 7},
                      IntCase{"negative in range", "-1", true, -1}, IntCase{"empty", "", false, 0},
                      IntCase{"only whitespace", " \n\t", false, 0},
                      IntCase{"plus sign", "+5", false, 0},
                      IntCase{"trailing junk", "5x", false, 0},
                      IntCase{"inner space", "1 2", false, 0}, IntCase{"hex", "0x10", false, 0},
                      IntCase{"below range", "-101", false, 0},
                      IntCase{"above range", "1000001", false, 0},
                      IntCase{"overflow", "99999999999999999999999", false, 0},
                      IntCase{"binary", std::string("\xff\xfe\x00\x01", 4), false, 0},
                      IntCase{"embedded NUL", std::string("1\0", 2), false, 0},
                      IntCase{"lone minus", "-", false, 0}));

TEST(ParseUint64, RejectsNegativeAndOverflow) {
  EXPECT_EQ(*parseUint64("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
  EXPECT_FALSE(parseUint64("18446744073709551616").ok());
  EXPECT_FALSE(parseUint64("-0").ok());
  EXPECT_FALSE(parseUint64("").ok());
}

TEST(ParseIntList, ParsesDriverStyleListsAndNamesTheBadItem) {
  EXPECT_EQ(*parseIntList("12, 1, 3, 4\n", ',', 0, 63), (std::vector<int>{12, 1, 3, 4}));
  EXPECT_TRUE(parseIntList("\n", ',', 0, 63)->empty());
  auto bad = parseIntList("1,,2", ',', 0, 63);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("\"1,,2\""), std::string::npos) << bad.error().message;
  EXPECT_FALSE(parseIntList("1, 64", ',', 0, 63).ok());
}

TEST(ParseDuration, UnderstandsUnits) {
  EXPECT_EQ(*parseDurationMillis("250ms"), 250);
  EXPECT_EQ(*parseDurationMillis("2s"), 2000);
  EXPECT_EQ(*parseDurationMillis("5m"), 300'000);
  EXPECT_EQ(*parseDurationMillis("1h"), 3'600'000);
  EXPECT_FALSE(parseDurationMillis("5").ok());
  EXPECT_FALSE(parseDurationMillis("ms").ok());
  EXPECT_FALSE(parseDurationMillis("-1s").ok());
  EXPECT_FALSE(parseDurationMillis("99999999999999999h").ok());
  // Regression: 2^63 ns and more wrapped into a busy loop.
  EXPECT_EQ(*parseDurationMillis("8784h"), kMaxDurationMillis);
  const auto tooLong = parseDurationMillis("9999999999h");
  ASSERT_FALSE(tooLong.ok());
  EXPECT_NE(tooLong.error().message.find("longer than the 366 days"), std::string::npos);
  EXPECT_FALSE(parseDurationMillis("8784h1ms").ok());
  EXPECT_FALSE(parseDurationMillis("31622400001ms").ok());
}

TEST(ParseBool, AcceptsCommonSpellingsOnly) {
  EXPECT_TRUE(*parseBool("TRUE"));
  EXPECT_FALSE(*parseBool("off"));
  EXPECT_FALSE(parseBool("maybe").ok());
}

}  // namespace
}  // namespace torus
