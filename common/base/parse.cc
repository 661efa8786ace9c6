#include "common/base/parse.h"

#include <charconv>
#include <limits>
#include <string>

#include "common/base/strings.h"

namespace torus {
namespace {

Error badNumber(std::string_view what, std::string_view text) {
  return makeError(ErrorCode::kInvalidArgument, "expected " + std::string(what) + ", got " +
                                                    quoteJsonString(clipForMessage(text)));
}

}  // namespace

Result<std::int64_t> parseInt64(std::string_view text, std::int64_t min, std::int64_t max) {
  const std::string_view trimmed = trim(text);
  const std::string what = "integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (trimmed.empty()) return badNumber(what, text);
  // from_chars accepts a leading '-' only; reject '+' and anything else before the digits.
  std::int64_t value = 0;
  const char* begin = trimmed.data();
  const char* end = trimmed.data() + trimmed.size();
  const auto [ptr, ec] = std::from_chars(begin, end, value, 10);
  if (ec == std::errc::result_out_of_range) return badNumber(what + " (overflow)", text);
  if (ec != std::errc() || ptr != end) return badNumber(what, text);
  if (value < min || value > max) return badNumber(what, text);
  return value;
}

Result<std::uint64_t> parseUint64(std::string_view text) {
  const std::string_view trimmed = trim(text);
  constexpr std::string_view what = "unsigned integer";
  if (trimmed.empty() || trimmed.front() == '-') return badNumber(what, text);
  std::uint64_t value = 0;
  const char* end = trimmed.data() + trimmed.size();
  const auto [ptr, ec] = std::from_chars(trimmed.data(), end, value, 10);
  if (ec == std::errc::result_out_of_range) return badNumber("unsigned integer (overflow)", text);
  if (ec != std::errc() || ptr != end) return badNumber(what, text);
  return value;
}

Result<int> parseInt(std::string_view text, int min, int max) {
  auto value = parseInt64(text, min, max);
  if (!value) return std::move(value).error();
  return static_cast<int>(*value);
}

Result<std::vector<int>> parseIntList(std::string_view text, char separator, int min, int max) {
  std::vector<int> values;
  if (trim(text).empty()) return values;
  for (const std::string_view item : splitAndTrim(text, separator)) {
    auto value = parseInt(item, min, max);
    if (!value) {
      return makeError(
          ErrorCode::kInvalidArgument,
          "list " + quoteJsonString(clipForMessage(trim(text))) + ": " + value.error().message);
    }
    values.push_back(*value);
  }
  return values;
}

Result<std::int64_t> parseDurationMillis(std::string_view text) {
  const std::string_view trimmed = trim(text);
  struct Unit {
    std::string_view suffix;
    std::int64_t millis;
  };
  // "ms" before "s" so "250ms" is not read as 250m + "s".
  constexpr Unit kUnits[] = {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}};
  for (const Unit& unit : kUnits) {
    if (trimmed.size() > unit.suffix.size() && trimmed.ends_with(unit.suffix)) {
      const std::string_view number = trimmed.substr(0, trimmed.size() - unit.suffix.size());
      auto value = parseInt64(number, 0, std::numeric_limits<std::int64_t>::max() / unit.millis);
      if (!value) break;
      if (*value * unit.millis > kMaxDurationMillis) {
        // Callers turn durations into std::chrono nanoseconds; past 2^63 ns (292 years) that
        // would wrap into a negative interval and a busy loop.
        return makeError(ErrorCode::kInvalidArgument,
                         "duration " + quoteJsonString(clipForMessage(text)) +
                             " is longer than the 366 days any setting allows");
      }
      return *value * unit.millis;
    }
  }
  return makeError(
      ErrorCode::kInvalidArgument,
      "expected a duration like 250ms, 2s, 5m or 1h, got " + quoteJsonString(clipForMessage(text)));
}

Result<bool> parseBool(std::string_view text) {
  const std::string lower = toLower(trim(text));
  if (lower == "true" || lower == "1" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "0" || lower == "no" || lower == "off") return false;
  return makeError(ErrorCode::kInvalidArgument,
                   "expected true or false, got " + quoteJsonString(clipForMessage(text)));
}

}  // namespace torus
