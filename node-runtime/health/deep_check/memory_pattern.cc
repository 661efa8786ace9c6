#include "node-runtime/health/deep_check/memory_pattern.h"

namespace torus::health {

std::string_view patternName(MemoryPattern pattern) {
  switch (pattern) {
    case MemoryPattern::kWalkingOnes:
      return "walking-ones";
    case MemoryPattern::kWalkingZeros:
      return "walking-zeros";
    case MemoryPattern::kAddressInAddress:
      return "address-in-address";
    case MemoryPattern::kInverseAddress:
      return "inverse-address";
  }
  return "unknown";
}

std::uint64_t patternWord(MemoryPattern pattern, std::uint64_t base, std::size_t index) {
  const std::uint64_t address = base + static_cast<std::uint64_t>(index) * sizeof(std::uint64_t);
  switch (pattern) {
    case MemoryPattern::kWalkingOnes:
      return std::uint64_t{1} << (index % 64);
    case MemoryPattern::kWalkingZeros:
      return ~(std::uint64_t{1} << (index % 64));
    case MemoryPattern::kAddressInAddress:
      return address;
    case MemoryPattern::kInverseAddress:
      return ~address;
  }
  return 0;
}

void fillPattern(MemoryPattern pattern, std::uint64_t base, std::span<std::uint64_t> words) {
  for (std::size_t i = 0; i < words.size(); ++i)
    words[i] = patternWord(pattern, base, i);
}

std::optional<PatternMismatch> verifyPattern(MemoryPattern pattern, std::uint64_t base,
                                             std::span<const std::uint64_t> words) {
  std::optional<PatternMismatch> first;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::uint64_t expected = patternWord(pattern, base, i);
    const std::uint64_t actual = words[i];
    if (actual == expected) continue;
    ++bad;
    if (!first) first = PatternMismatch{base + i * sizeof(std::uint64_t), expected, actual, 0};
  }
  if (first) first->badWords = bad;
  return first;
}

}  // namespace torus::health
