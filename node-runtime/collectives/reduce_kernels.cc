#include "node-runtime/collectives/reduce_kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/base/check.h"

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

// Two sources at a time keeps each pass a simple streaming loop the compiler vectorises.
template <typename T, ReduceOp kOp>
void reduceTyped(void* dstRaw, std::span<const std::byte* const> srcs, std::size_t count) {
  T* __restrict dst = static_cast<T*>(dstRaw);
  const T* __restrict a = reinterpret_cast<const T*>(srcs[0]);
  if (srcs.size() == 1) {
    std::memcpy(dst, a, count * sizeof(T));
    return;
  }
  const T* __restrict b = reinterpret_cast<const T*>(srcs[1]);
  for (std::size_t i = 0; i < count; ++i)
    dst[i] = apply<T, kOp>(a[i], b[i]);
  for (std::size_t k = 2; k < srcs.size(); ++k) {
    const T* __restrict c = reinterpret_cast<const T*>(srcs[k]);
    for (std::size_t i = 0; i < count; ++i)
      dst[i] = apply<T, kOp>(dst[i], c[i]);
  }
}

template <float (*kToFloat)(unsigned short), unsigned short (*kFromFloat)(float), ReduceOp kOp>
void reduceNarrowFloat(void* dstRaw, std::span<const std::byte* const> srcs, std::size_t count) {
  auto* dst = static_cast<unsigned short*>(dstRaw);
  constexpr std::size_t kBlock = 256;
  float acc[kBlock];
  for (std::size_t base = 0; base < count; base += kBlock) {
    const std::size_t n = std::min(kBlock, count - base);
    const auto* first = reinterpret_cast<const unsigned short*>(srcs[0]) + base;
    for (std::size_t i = 0; i < n; ++i)
      acc[i] = kToFloat(first[i]);
    for (std::size_t k = 1; k < srcs.size(); ++k) {
      const auto* src = reinterpret_cast<const unsigned short*>(srcs[k]) + base;
      for (std::size_t i = 0; i < n; ++i)
        acc[i] = apply<float, kOp>(acc[i], kToFloat(src[i]));
    }
    for (std::size_t i = 0; i < n; ++i)
      dst[base + i] = kFromFloat(acc[i]);
  }
}

template <ReduceOp kOp>
void reduceForOp(void* dst, std::span<const std::byte* const> srcs, std::size_t count,
                 DataType type) {
  switch (type) {
    case DataType::kF32:
      return reduceTyped<float, kOp>(dst, srcs, count);
    case DataType::kF64:
      return reduceTyped<double, kOp>(dst, srcs, count);
    case DataType::kF16:
      return reduceNarrowFloat<halfToFloat, floatToHalf, kOp>(dst, srcs, count);
    case DataType::kBf16:
      return reduceNarrowFloat<bf16ToFloat, floatToBf16, kOp>(dst, srcs, count);
    case DataType::kI8:
      return reduceTyped<std::int8_t, kOp>(dst, srcs, count);
    case DataType::kU8:
      return reduceTyped<std::uint8_t, kOp>(dst, srcs, count);
    case DataType::kI32:
      return reduceTyped<std::int32_t, kOp>(dst, srcs, count);
    case DataType::kI64:
      return reduceTyped<std::int64_t, kOp>(dst, srcs, count);
  }
}

}  // namespace

void reduceInto(void* dst, std::span<const std::byte* const> srcs, std::size_t count, DataType type,
                ReduceOp op) {
  TORUS_CHECK(!srcs.empty(), "reduceInto needs at least one source");
  if (count == 0) return;
  switch (op) {
    case ReduceOp::kSum:
      return reduceForOp<ReduceOp::kSum>(dst, srcs, count, type);
    case ReduceOp::kProd:
      return reduceForOp<ReduceOp::kProd>(dst, srcs, count, type);
    case ReduceOp::kMax:
      return reduceForOp<ReduceOp::kMax>(dst, srcs, count, type);
    case ReduceOp::kMin:
      return reduceForOp<ReduceOp::kMin>(dst, srcs, count, type);
  }
}

}  // namespace torus::coll
