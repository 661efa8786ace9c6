#include "common/kube/quantity.h"

#include <limits>
#include <string>

#include "common/base/strings.h"

namespace torus::kube {
namespace {

struct Suffix {
  std::string_view text;
  int powerOf10;
  int powerOf2;
};
// Binary suffixes first, so "Ki" is not read as a decimal one.
constexpr Suffix kSuffixes[] = {{"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40},
                                {"Pi", 0, 50}, {"Ei", 0, 60}, {"n", -9, 0},  {"u", -6, 0},
                                {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},
                                {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"", 0, 0}};

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

Result<std::int64_t> wholeQuantity(std::string_view text, std::int64_t min, std::int64_t max) {
  const std::string shown = quoteJsonString(clipForMessage(text));
  const auto notQuantity = [&] {
    return makeError(ErrorCode::kInvalidArgument,
                     "expected a quantity such as 4, 2k or 1Ki, got " + shown);
  };
  std::size_t pos = 0;
  bool negative = false;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) negative = text[pos++] == '-';
  std::string digits;  // integer and fraction digits, without the point
  int fractionDigits = 0;
  bool point = false;
  for (; pos < text.size() && (isDigit(text[pos]) || (text[pos] == '.' && !point)); ++pos) {
    if (text[pos] == '.') {
      point = true;
    } else {
      digits += text[pos];
      fractionDigits += point ? 1 : 0;
    }
  }
  if (digits.empty()) return notQuantity();
  const std::string_view rest = text.substr(pos);
  int powerOf10 = -fractionDigits;
  int powerOf2 = 0;
  if ((rest.starts_with('e') || rest.starts_with('E')) && rest.size() > 1 && rest[1] != 'i') {
    // A decimal exponent ("1e3", "1E-3"); "E" alone and "Ei" are suffixes, below.
    std::size_t at = 1;
    const bool negativeExponent = rest[at] == '-';
    if (rest[at] == '+' || rest[at] == '-') ++at;
    if (at >= rest.size() || rest.size() - at > 4) return notQuantity();
    int exponent = 0;
    for (; at < rest.size(); ++at) {
      if (!isDigit(rest[at])) return notQuantity();
      exponent = exponent * 10 + (rest[at] - '0');
    }
    powerOf10 += negativeExponent ? -exponent : exponent;
  } else {
    const Suffix* found = nullptr;
    for (const Suffix& suffix : kSuffixes) {
      if (rest == suffix.text) {
        found = &suffix;
        break;
      }
    }
    if (found == nullptr) return notQuantity();
    powerOf10 += found->powerOf10;
    powerOf2 = found->powerOf2;
  }

  // value = digits x 10^powerOf10 x 2^powerOf2, computed exactly.
  const auto outOfRange = [&] {
    return makeError(ErrorCode::kInvalidArgument, "expected " + std::to_string(min) + ".." +
                                                      std::to_string(max) + ", got " + shown);
  };
  while (digits.size() > 1 && digits.front() == '0')
    digits.erase(0, 1);
  std::int64_t value = 0;
  if (digits != "0") {
    while (powerOf10 < 0 && digits.back() == '0') {
      digits.pop_back();
      ++powerOf10;
    }
    if (powerOf10 < 0) {
      return makeError(
          ErrorCode::kInvalidArgument,
          "expected a whole number (extended resources are counted in units), got " + shown);
    }
    // More than 18 digits, or a factor past 2^62, is beyond every range a caller accepts.
    if (digits.size() + static_cast<std::size_t>(powerOf10) > 18 || powerOf2 > 62) {
      return outOfRange();
    }
    value = std::stoll(digits);
    for (int i = 0; i < powerOf10; ++i)
      value *= 10;
    if (value > (std::numeric_limits<std::int64_t>::max() >> powerOf2)) return outOfRange();
    value <<= powerOf2;
  }
  if (negative) value = -value;
  if (value < min || value > max) return outOfRange();
  return value;
}

}  // namespace torus::kube
