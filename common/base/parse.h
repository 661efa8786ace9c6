// Strict parsers for numbers and lists that come from outside (sysfs, flags, YAML, files).
//
// Every parser rejects empty text, signs where none belong, trailing garbage and overflow, and
// says what it expected and what it got. Surrounding whitespace (sysfs adds a newline) is ignored.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace torus {

// A decimal integer in [min, max].
Result<std::int64_t> parseInt64(std::string_view text, std::int64_t min, std::int64_t max);
Result<std::uint64_t> parseUint64(std::string_view text);
Result<int> parseInt(std::string_view text, int min, int max);
// A decimal list separated by `separator` with optional spaces: "12, 1, 3, 4". Empty text is
// an empty list; an empty item ("1,,2") is an error.
Result<std::vector<int>> parseIntList(std::string_view text, char separator, int min, int max);
// Durations in flags and YAML: "250ms", "2s", "5m", "1h".
// The longest duration any setting takes: 366 days.
inline constexpr std::int64_t kMaxDurationMillis = 366LL * 24 * 3'600'000;
Result<std::int64_t> parseDurationMillis(std::string_view text);
Result<bool> parseBool(std::string_view text);

}  // namespace torus
