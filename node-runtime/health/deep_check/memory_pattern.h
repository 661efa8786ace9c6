// Memory test patterns for the deep check: what each 64-bit word of a window should hold, and
// where a window read back differs from it. Pure: no I/O, so the patterns are unit-tested on plain
// buffers and the same code then runs on a device's memory.
//
// Walking ones / zeros catch stuck and shorted data lines (every bit is 1 once next to 0s, and
// the reverse); address-in-address and its inverse catch address lines that alias two words,
// because every word holds a value unique to its own address.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace torus::health {

enum class MemoryPattern { kWalkingOnes, kWalkingZeros, kAddressInAddress, kInverseAddress };

inline constexpr MemoryPattern kAllMemoryPatterns[] = {
    MemoryPattern::kWalkingOnes, MemoryPattern::kWalkingZeros, MemoryPattern::kAddressInAddress,
    MemoryPattern::kInverseAddress};

std::string_view patternName(MemoryPattern pattern);

// The word `pattern` puts at word `index` of a window that starts at byte `base` of the memory.
std::uint64_t patternWord(MemoryPattern pattern, std::uint64_t base, std::size_t index);

void fillPattern(MemoryPattern pattern, std::uint64_t base, std::span<std::uint64_t> words);

struct PatternMismatch {
  std::uint64_t offset = 0;  // byte offset in the memory (base + 8 * word) of the first bad word
  std::uint64_t expected = 0;
  std::uint64_t actual = 0;
  std::size_t badWords = 0;  // how many words of the window differ
};

std::optional<PatternMismatch> verifyPattern(MemoryPattern pattern, std::uint64_t base,
                                             std::span<const std::uint64_t> words);

}  // namespace torus::health
