#include "node-runtime/collectives/core/reduce_kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/base/check.h"
#include "node-runtime/collectives/core/streaming_stores.h"

namespace torus::coll {
namespace {

template <typename T, bool = std::is_integral_v<T>>
struct UnsignedOf {
  using type = T;
};
template <typename T>
struct UnsignedOf<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
struct Arith {
  // Integers: compute in the unsigned type of the same width so overflow wraps instead of being
  // undefined behaviour; the bit pattern is what a two's-complement machine would produce.
  using U = typename UnsignedOf<T>::type;
  static T add(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
  static T mul(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      // Promote narrow types to unsigned int first so u16*u16 cannot overflow a signed int.
      using Wide = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
      return static_cast<T>(static_cast<U>(static_cast<Wide>(static_cast<U>(a)) *
                                           static_cast<Wide>(static_cast<U>(b))));
    } else {
      return a * b;
    }
  }
};

template <typename T, ReduceOp kOp>
inline T apply(T a, T b) {
  if constexpr (kOp == ReduceOp::kSum) return Arith<T>::add(a, b);
  if constexpr (kOp == ReduceOp::kProd) return Arith<T>::mul(a, b);
  if constexpr (kOp == ReduceOp::kMax) return a < b ? b : a;
  if constexpr (kOp == ReduceOp::kMin) return b < a ? b : a;
}

template <typename T>
T unchanged(T value) {
  return value;
}

// Results are built one 64-byte line at a time: every source's line is read, then the line is
// stored to each output. A large reduction so reads each source once and writes each output
// once, with no scratch memory between loads and stores, and an output may be one of the sources
// (in place).
//
// Element by element, for any type: `Stored` is the element in memory, `Wide` the type the
// arithmetic runs in (float for f16 and bf16, so they round once per element). Used for the
// narrow floats and for the last partial line of every type.
template <typename Stored, typename Wide, Wide (*kWiden)(Stored), Stored (*kNarrow)(Wide),
          ReduceOp kOp>
struct ScalarLines {
  static constexpr std::size_t kPerLine = kLineBytes / sizeof(Stored);

  // Elements [at, at + n) of every source, n <= kPerLine, reduced into `line`.
  static void reduceLine(Stored (&line)[kPerLine], std::span<const std::byte* const> srcs,
                         std::size_t at, std::size_t n) {
    Stored loaded[kPerLine];
    Wide acc[kPerLine];
    std::memcpy(loaded, srcs[0] + at * sizeof(Stored), n * sizeof(Stored));
    for (std::size_t j = 0; j < n; ++j)
      acc[j] = kWiden(loaded[j]);
    for (std::size_t k = 1; k < srcs.size(); ++k) {
      std::memcpy(loaded, srcs[k] + at * sizeof(Stored), n * sizeof(Stored));
      for (std::size_t j = 0; j < n; ++j)
        acc[j] = apply<Wide, kOp>(acc[j], kWiden(loaded[j]));
    }
    for (std::size_t j = 0; j < n; ++j)
      line[j] = kNarrow(acc[j]);
  }

  // Elements [from, count).
  static void run(std::span<std::byte* const> outputs, std::span<const std::byte* const> srcs,
                  std::size_t from, std::size_t count, bool streaming) {
    alignas(kLineBytes) Stored line[kPerLine];
    const auto* lineBytes = reinterpret_cast<const std::byte*>(line);
    std::size_t at = from;
    for (; at + kPerLine <= count; at += kPerLine) {
      reduceLine(line, srcs, at, kPerLine);
      for (std::byte* out : outputs)
        storeLine(out + at * sizeof(Stored), lineBytes, streaming);
    }
    if (at < count) {
      reduceLine(line, srcs, at, count - at);
      for (std::byte* out : outputs)
        std::memcpy(out + at * sizeof(Stored), line, (count - at) * sizeof(Stored));
    }
  }
};

// Whole lines as four 16-byte vectors held in registers, for the types the arithmetic runs in
// directly (GCC/Clang vector extensions: the same operators, lane by lane). Integer lanes are
// unsigned, so sums and products wrap as the scalar path's do; comparisons use the signed lanes.
// The four vectors are separate values, not an array, so that the compiler keeps them in
// registers instead of spilling every line to the stack.
template <typename T, ReduceOp kOp>
struct VectorLines {
  using Lane = typename UnsignedOf<T>::type;
  typedef Lane Vec __attribute__((vector_size(16)));
  typedef T SignedVec __attribute__((vector_size(16)));
  static constexpr std::size_t kPerLine = kLineBytes / sizeof(T);

  struct Line {
    Vec a, b, c, d;
  };

  static Vec loadVec(const std::byte* from) {
    Vec v;
    std::memcpy(&v, from, sizeof v);
    return v;
  }
  static Line load(const std::byte* from) {
    return {loadVec(from), loadVec(from + 16), loadVec(from + 32), loadVec(from + 48)};
  }
  static Vec combine(Vec x, Vec y) {
    if constexpr (kOp == ReduceOp::kSum) return x + y;
    if constexpr (kOp == ReduceOp::kProd) return x * y;
    if constexpr (kOp == ReduceOp::kMax) return (SignedVec(x) < SignedVec(y)) ? y : x;
    if constexpr (kOp == ReduceOp::kMin) return (SignedVec(y) < SignedVec(x)) ? y : x;
  }

  static void run(std::span<std::byte* const> outputs, std::span<const std::byte* const> srcs,
                  std::size_t count, bool streaming) {
    std::size_t at = 0;
    for (; at + kPerLine <= count; at += kPerLine) {
      const std::size_t offset = at * sizeof(T);
      Line acc = load(srcs[0] + offset);
      for (std::size_t k = 1; k < srcs.size(); ++k) {
        const Line next = load(srcs[k] + offset);
        acc = {combine(acc.a, next.a), combine(acc.b, next.b), combine(acc.c, next.c),
               combine(acc.d, next.d)};
      }
      for (std::byte* out : outputs)
        storeVectors(out + offset, acc.a, acc.b, acc.c, acc.d, streaming);
    }
    ScalarLines<T, T, unchanged<T>, unchanged<T>, kOp>::run(outputs, srcs, at, count, streaming);
  }
};

template <ReduceOp kOp>
void reduceForOp(std::span<std::byte* const> outputs, std::span<const std::byte* const> srcs,
                 std::size_t count, DataType type, bool streaming) {
  switch (type) {
    case DataType::kF32:
      return VectorLines<float, kOp>::run(outputs, srcs, count, streaming);
    case DataType::kF64:
      return VectorLines<double, kOp>::run(outputs, srcs, count, streaming);
    case DataType::kF16:
      return ScalarLines<unsigned short, float, halfToFloat, floatToHalf, kOp>::run(
          outputs, srcs, 0, count, streaming);
    case DataType::kBf16:
      return ScalarLines<unsigned short, float, bf16ToFloat, floatToBf16, kOp>::run(
          outputs, srcs, 0, count, streaming);
    case DataType::kI8:
      return VectorLines<std::int8_t, kOp>::run(outputs, srcs, count, streaming);
    case DataType::kU8:
      return VectorLines<std::uint8_t, kOp>::run(outputs, srcs, count, streaming);
    case DataType::kI32:
      return VectorLines<std::int32_t, kOp>::run(outputs, srcs, count, streaming);
    case DataType::kI64:
      return VectorLines<std::int64_t, kOp>::run(outputs, srcs, count, streaming);
  }
}

}  // namespace

void reduceToOutputs(std::span<std::byte* const> outputs, std::span<const std::byte* const> srcs,
                     std::size_t count, DataType type, ReduceOp op, bool streaming) {
  TORUS_CHECK(!srcs.empty(), "a reduction needs at least one source");
  if (count == 0) return;
  switch (op) {
    case ReduceOp::kSum:
      reduceForOp<ReduceOp::kSum>(outputs, srcs, count, type, streaming);
      break;
    case ReduceOp::kProd:
      reduceForOp<ReduceOp::kProd>(outputs, srcs, count, type, streaming);
      break;
    case ReduceOp::kMax:
      reduceForOp<ReduceOp::kMax>(outputs, srcs, count, type, streaming);
      break;
    case ReduceOp::kMin:
      reduceForOp<ReduceOp::kMin>(outputs, srcs, count, type, streaming);
      break;
  }
  fenceStreamingStores(streaming);
}

void reduceInto(void* dst, std::span<const std::byte* const> srcs, std::size_t count, DataType type,
                ReduceOp op) {
  std::byte* const output = static_cast<std::byte*>(dst);
  reduceToOutputs(std::span(&output, 1), srcs, count, type, op, false);
}

}  // namespace torus::coll
