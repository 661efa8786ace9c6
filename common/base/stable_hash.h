// A hash that is the same on every build and platform (unlike std::hash), for names derived from
// inputs (ResourceSlice names, device group ids) and checksums of files the process writes
// itself: 64-bit FNV-1a, as kubelet's own checkpoints use FNV for theirs. Not for adversaries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace torus {

std::uint64_t fnv1a64(std::string_view text);
// The value as 16 lowercase hex digits.
std::string hex16(std::uint64_t value);

}  // namespace torus
