// The element-wise reductions every reducing collective runs: dst = src[0] op src[1] op ... .
//
// Owns: the arithmetic per (DataType, ReduceOp). Does not own: which memory is read or written
// (the algorithms decide). Integer sum and product wrap modulo 2^bits (computed unsigned, so no
// signed overflow); f16 and bf16 are widened to float, reduced, and rounded once per element.
#pragma once

#include <cstddef>
#include <span>

#include "node-runtime/collectives/core/data_type.h"

namespace torus::coll {

// outputs[k][i] = srcs[0][i] op srcs[1][i] op ... for i < count, for every output. An output may
// be a source at the same address (in place) but must not overlap one anywhere else; srcs must
// not be empty. With `streaming` the outputs go around the cache (streaming_stores.h), fenced
// before this returns.
void reduceToOutputs(std::span<std::byte* const> outputs, std::span<const std::byte* const> srcs,
                     std::size_t count, DataType type, ReduceOp op, bool streaming);

// The same into one output, through the cache.
void reduceInto(void* dst, std::span<const std::byte* const> srcs, std::size_t count, DataType type,
                ReduceOp op);

}  // namespace torus::coll
