// Small text helpers shared by every module: trimming, splitting, joining, JSON quoting.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace torus {

std::string_view trim(std::string_view text);
std::string toLower(std::string_view text);
// Splits on `separator` and trims each piece; "a, b,,c" -> {"a", "b", "", "c"}.
std::vector<std::string_view> splitAndTrim(std::string_view text, char separator);
std::string joinStrings(std::span<const std::string_view> items, std::string_view separator);
std::string joinStrings(std::span<const std::string> items, std::string_view separator);
// The first `shown` items joined, then " and N more": a message about 10,000 bad ids stays short.
std::string joinFirst(std::span<const std::string> items, std::string_view separator,
                      std::size_t shown = 8);
// A JSON string literal, quotes included; control and non-ASCII bytes are \u-escaped so garbage
// read from sysfs can be shown in a log line or error without breaking it.
std::string quoteJsonString(std::string_view text);
// Bytes made safe for a terminal and for JSON: printable ASCII, newlines and tabs as they are,
// every other byte (controls, escape sequences, anything not ASCII) as \xNN.
std::string escapeUnprintable(std::string_view bytes);
// `text` for a URL query value: all but RFC 3986's unreserved characters as %XX.
std::string percentEncoded(std::string_view text);
// Shortens `text` to at most `limit` bytes for messages, marking the cut.
std::string_view clipForMessage(std::string_view text, std::size_t limit = 64);

}  // namespace torus
