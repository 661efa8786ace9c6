#include "common/base/strings.h"

#include <gtest/gtest.h>

namespace torus {
namespace {

TEST(Strings, TrimAndSplit) {
  EXPECT_EQ(trim("  a b \n"), "a b");
  const auto pieces = splitAndTrim(" a, b,,c ", ',');
  ASSERT_EQ(pieces.size(), 4U);
  EXPECT_EQ(pieces[0], "a");
  EXPECT_EQ(pieces[2], "");
  EXPECT_EQ(pieces[3], "c");
}

TEST(Strings, QuoteJsonStringEscapesGarbageSoMessagesStayOneLine) {
  EXPECT_EQ(quoteJsonString("a\"b\n"), "\"a\\\"b\\n\"");
  EXPECT_EQ(quoteJsonString(std::string("\xff\x01", 2)), "\"\\u00ff\\u0001\"");
}

TEST(Strings, JoinStrings) {
  const std::vector<std::string> items{"a", "b"};
  EXPECT_EQ(joinStrings(items, ", "), "a, b");
  EXPECT_EQ(joinStrings(std::vector<std::string>{}, ","), "");
}

}  // namespace
}  // namespace torus
