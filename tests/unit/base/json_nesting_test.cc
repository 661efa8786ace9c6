#include "common/base/json_nesting.h"

#include <string>

#include <gtest/gtest.h>

namespace torus {
namespace {

std::string nested(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(JsonNesting, AllowsUpToTheLimitAndNamesWhereItWentDeeper) {
  EXPECT_TRUE(checkJsonNesting(nested(100)).ok());
  const auto deep = checkJsonNesting(nested(101));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(deep.error().message, "nests deeper than 100 levels (at byte 100)");
  EXPECT_FALSE(checkJsonNesting(R"({"a":{"b":[{}]}})", 3).ok());
  EXPECT_TRUE(checkJsonNesting(R"({"a":{"b":[]},"c":[{}]})", 3).ok());
}

TEST(JsonNesting, BracketsInsideStringsDoNotCount) {
  const std::string text = "{\"k\":\"" + nested(500) + "\\\"[[[[\"}";
  EXPECT_TRUE(checkJsonNesting(text, 1).ok()) << text;
  // An escaped backslash ends before the quote, so the string closes there.
  EXPECT_FALSE(checkJsonNesting(R"(["\\",[[]]])", 2).ok());
}

TEST(JsonNesting, UnbalancedTextIsLeftToTheParser) {
  EXPECT_TRUE(checkJsonNesting("]]]]}}}").ok());
  EXPECT_TRUE(checkJsonNesting("\"unterminated [[[[").ok());
}

}  // namespace
}  // namespace torus
