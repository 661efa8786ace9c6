// Stores that go around the cache, for results this core will not read again soon: skipping the
// read-for-ownership of each output line saves a third of a large reduction's memory traffic.
//
// Owns: when streaming pays, the 64-byte line store, the bulk copy and the fence. x86 with SSE2
// streams; elsewhere every helper is a plain store. Does not own: what is stored (the callers).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace torus::coll {

inline constexpr std::size_t kLineBytes = 64;

// From this many bytes per rank's share on, outputs are streamed: smaller results may still be
// in this core's cache when they are next read, and streaming would push them out to memory.
inline constexpr std::size_t kStreamingBytes = std::size_t{1} << 20;

inline bool worthStreaming(std::size_t bytes) {
  return bytes >= kStreamingBytes;
}

// One line given as four 16-byte vectors (GCC/Clang vector types) to dst. Streaming needs dst on
// a 16-byte boundary; a destination off it is stored through the cache instead.
template <typename Vec>
inline void storeVectors(std::byte* dst, Vec a, Vec b, Vec c, Vec d, bool streaming) {
  static_assert(sizeof(Vec) == 16);
#if defined(__SSE2__)
  if (streaming && (reinterpret_cast<std::uintptr_t>(dst) & 15U) == 0) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), std::bit_cast<__m128i>(a));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), std::bit_cast<__m128i>(b));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), std::bit_cast<__m128i>(c));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), std::bit_cast<__m128i>(d));
    return;
  }
#endif
  (void)streaming;
  std::memcpy(dst, &a, 16);
  std::memcpy(dst + 16, &b, 16);
  std::memcpy(dst + 32, &c, 16);
  std::memcpy(dst + 48, &d, 16);
}

// One line from `line` (any alignment) to dst, as storeVectors stores it.
inline void storeLine(std::byte* dst, const std::byte* line, bool streaming) {
  // Four separate values, not an array, so that they stay in registers.
  typedef unsigned char Bytes __attribute__((vector_size(16)));
  Bytes a, b, c, d;
  std::memcpy(&a, line, 16);
  std::memcpy(&b, line + 16, 16);
  std::memcpy(&c, line + 32, 16);
  std::memcpy(&d, line + 48, 16);
  storeVectors(dst, a, b, c, d, streaming);
}

// n bytes from src to dst (not overlapping); with `streaming`, whole lines go around the cache
// once dst is on a 16-byte boundary.
inline void copyBytes(std::byte* dst, const std::byte* src, std::size_t n, bool streaming) {
  if (!streaming) {
    std::memcpy(dst, src, n);
    return;
  }
  const auto misalign = reinterpret_cast<std::uintptr_t>(dst) & 15U;
  const std::size_t head = misalign == 0 ? 0 : std::min<std::size_t>(16 - misalign, n);
  std::memcpy(dst, src, head);
  std::size_t i = head;
  for (; i + kLineBytes <= n; i += kLineBytes)
    storeLine(dst + i, src + i, true);
  std::memcpy(dst + i, src + i, n - i);
}

// Streaming stores are not ordered by a later release store (the one that announces a result to
// the peers): fence them first.
inline void fenceStreamingStores(bool streaming) {
#if defined(__SSE2__)
  if (streaming) _mm_sfence();
#endif
  (void)streaming;
}

}  // namespace torus::coll
