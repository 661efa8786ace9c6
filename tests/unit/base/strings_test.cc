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

// What another process printed reaches a terminal and JSON only this way: no escape sequence
// acts on the terminal, and no invalid UTF-8 makes a JSON dump throw.
TEST(Strings, EscapeUnprintableLeavesOnlyPrintableAscii) {
  EXPECT_EQ(escapeUnprintable("ok line\n\tnext"), "ok line\n\tnext");
  EXPECT_EQ(escapeUnprintable("\x1b[2Jcleared\r\xff\xc3\xa9"),
            "\\x1b[2Jcleared\\x0d\\xff\\xc3\\xa9");
  EXPECT_EQ(escapeUnprintable(std::string_view("a\0b", 3)), "a\\x00b");
}

}  // namespace
}  // namespace torus
