// The collectives of a NetGroup (message passing over libfabric). Steps and bytes on the wire
// are in docs/algorithms.md. Every algorithm is safe in place: a region is read before this rank
// overwrites it, and reductions that would alias a source go through a small bounce block.
#include <algorithm>
#include <cstring>

#include "common/base/log.h"
#include "node-runtime/collectives/core/reduce_kernels.h"
#include "node-runtime/collectives/net/net_group.h"

namespace torus::coll {
namespace {

int wrap(int value, int n) {
  return ((value % n) + n) % n;
}

// dst = a op b, element-wise, where dst may be a or b.
void reduceTwo(std::byte* dst, const std::byte* a, const std::byte* b, std::size_t count,
               DataType type, ReduceOp op) {
  const std::byte* sources[2] = {a, b};
  reduceInto(dst, sources, count, type, op);
}

// Chunk boundaries (bytes) of `count` elements split over n ranks, whole elements each.
std::vector<std::size_t> chunkOffsets(std::size_t count, std::size_t elem, int n) {
  std::vector<std::size_t> offsets(static_cast<std::size_t>(n) + 1);
  const std::size_t per = count / static_cast<std::size_t>(n);
  const std::size_t extra = count % static_cast<std::size_t>(n);
  std::size_t at = 0;
  for (int c = 0; c < n; ++c) {
    offsets[static_cast<std::size_t>(c)] = at * elem;
    at += per + (static_cast<std::size_t>(c) < extra ? 1 : 0);
  }
  offsets[static_cast<std::size_t>(n)] = at * elem;
  return offsets;
}

std::size_t chunkSize(const std::vector<std::size_t>& offsets, int chunk) {
  return offsets[static_cast<std::size_t>(chunk) + 1] - offsets[static_cast<std::size_t>(chunk)];
}

std::size_t largestChunk(const std::vector<std::size_t>& offsets) {
  std::size_t largest = 0;
  for (std::size_t c = 0; c + 1 < offsets.size(); ++c)
    largest = std::max(largest, offsets[c + 1] - offsets[c]);
  return largest;
}

}  // namespace

// Ring reduce-scatter: in step s rank r sends chunk r-s-1 to r+1 and receives chunk r-s-2 from
// r-1, adding its own input; after n-1 steps chunk r is complete on rank r. Each step's chunk
// travels in slices and each slice is reduced as soon as it lands.
// finalOnly: `out` holds only chunk r (ReduceScatter); partial chunks live in scratch.
Result<void> NetGroup::ringReduceScatter(const GroupCall& call, const std::byte* in,
                                         const std::vector<std::size_t>& offsets, std::size_t elem,
                                         DataType type, ReduceOp op, std::byte* out, bool finalOnly,
                                         std::uint32_t firstMessage, std::size_t slice) {
  const int n = size();
  const std::size_t maxChunk = largestChunk(offsets);
  const std::size_t slicesPerChunk = std::max<std::size_t>(1, (maxChunk + slice - 1) / slice);
  std::byte* incoming = scratch(maxChunk * (finalOnly ? 3 : 1));
  std::byte* partial[2] = {incoming + maxChunk, incoming + 2 * maxChunk};
  const auto reducedAt = [&](int chunk, int step) -> std::byte* {
    if (!finalOnly) return out + offsets[static_cast<std::size_t>(chunk)];
    return step == n - 2 ? out : partial[step % 2];
  };
  for (int step = 0; step < n - 1; ++step) {
    const int sendChunk = wrap(rank_ - step - 1, n);
    const int recvChunk = wrap(rank_ - step - 2, n);
    const std::byte* sendFrom = step == 0 ? in + offsets[static_cast<std::size_t>(sendChunk)]
                                          : reducedAt(sendChunk, step - 1);
    const std::size_t sendBytes = chunkSize(offsets, sendChunk);
    const std::size_t recvBytes = chunkSize(offsets, recvChunk);
    const auto base =
        static_cast<std::uint32_t>(firstMessage + static_cast<std::size_t>(step) * slicesPerChunk);
    transfers_.clear();
    for (std::size_t k = 0; k * slice < recvBytes; ++k) {
      transfers_.push_back({false, wrap(rank_ - 1, n), incoming + k * slice,
                            std::min(slice, recvBytes - k * slice),
                            base + static_cast<std::uint32_t>(k), call.sequence, false});
    }
    for (std::size_t k = 0; k * slice < sendBytes; ++k) {
      transfers_.push_back({true, wrap(rank_ + 1, n), const_cast<std::byte*>(sendFrom) + k * slice,
                            std::min(slice, sendBytes - k * slice),
                            base + static_cast<std::uint32_t>(k), call.sequence, false});
    }
    const std::byte* mine = in + offsets[static_cast<std::size_t>(recvChunk)];
    std::byte* target = reducedAt(recvChunk, step);
    stage_ = "ring reduce-scatter";
    if (auto status = run(call, transfers_,
                          [&](std::size_t i) {
                            const std::size_t at =
                                static_cast<std::size_t>(transfers_[i].data - incoming);
                            reduceTwo(target + at, mine + at, incoming + at,
                                      transfers_[i].bytes / elem, type, op);
                          });
        !status)
      return status;
  }
  return okResult();
}

// Ring all-gather: in step s rank r passes chunk r-s on to r+1 and receives chunk r-s-1 from
// r-1 straight into its place in `out`.
Result<void> NetGroup::ringAllGather(const GroupCall& call, std::byte* out,
                                     const std::vector<std::size_t>& offsets,
                                     std::uint32_t firstMessage, std::size_t slice) {
  const int n = size();
  const std::size_t slicesPerChunk =
      std::max<std::size_t>(1, (largestChunk(offsets) + slice - 1) / slice);
  for (int step = 0; step < n - 1; ++step) {
    const int sendChunk = wrap(rank_ - step, n);
    const int recvChunk = wrap(rank_ - step - 1, n);
    const auto base =
        static_cast<std::uint32_t>(firstMessage + static_cast<std::size_t>(step) * slicesPerChunk);
    transfers_.clear();
    const auto add = [&](bool isSend, int peer, int chunk) {
      std::byte* at = out + offsets[static_cast<std::size_t>(chunk)];
      const std::size_t bytes = chunkSize(offsets, chunk);
      for (std::size_t k = 0; k * slice < bytes; ++k) {
        transfers_.push_back({isSend, peer, at + k * slice, std::min(slice, bytes - k * slice),
                              base + static_cast<std::uint32_t>(k), call.sequence, false});
      }
    };
    add(false, wrap(rank_ - 1, n), recvChunk);
    add(true, wrap(rank_ + 1, n), sendChunk);
    stage_ = "ring all-gather";
    if (auto status = runPlain(call, transfers_); !status) return status;
  }
  return okResult();
}

// Recursive doubling on `buffer` (already holding this rank's input). Ranks beyond the largest
// power of two p first hand their data to a partner and get the result back at the end, so the
// core runs on exactly p ranks. Sources are always combined lower rank first, so every rank
// computes bit-identical results.
Result<void> NetGroup::recursiveDoubling(const GroupCall& call, std::byte* buffer,
                                         std::size_t count, DataType type, ReduceOp op) {
  const int n = size();
  const std::size_t bytes = count * dataTypeSize(type);
  int p = 1;
  while (p * 2 <= n)
    p *= 2;
  const int extra = n - p;
  std::byte* incoming = scratch(bytes);
  std::uint32_t message = 0;
  const auto exchange = [&](int peer, bool sendIt, bool recvIt) {
    transfers_.clear();
    if (recvIt) transfers_.push_back({false, peer, incoming, bytes, message, call.sequence, false});
    if (sendIt) transfers_.push_back({true, peer, buffer, bytes, message, call.sequence, false});
    ++message;
    return runPlain(call, transfers_);
  };
  int virtualRank = rank_ - extra;
  if (rank_ < 2 * extra) {
    if (rank_ % 2 == 0) {
      stage_ = "recursive doubling (fold-in)";
      if (auto status = exchange(rank_ + 1, true, false); !status) return status;
      virtualRank = -1;
    } else {
      stage_ = "recursive doubling (fold-in)";
      if (auto status = exchange(rank_ - 1, false, true); !status) return status;
      reduceTwo(buffer, incoming, buffer, count, type, op);
      virtualRank = rank_ / 2;
    }
  }
  message = 1;  // both sides of every later exchange number it the same way
  if (virtualRank >= 0) {
    for (int mask = 1; mask < p; mask *= 2, ++message) {
      const int partnerVirtual = virtualRank ^ mask;
      const int partner = partnerVirtual < extra ? partnerVirtual * 2 + 1 : partnerVirtual + extra;
      transfers_.clear();
      transfers_.push_back({false, partner, incoming, bytes, message, call.sequence, false});
      transfers_.push_back({true, partner, buffer, bytes, message, call.sequence, false});
      stage_ = "recursive doubling";
      if (auto status = runPlain(call, transfers_); !status) return status;
      if (partner < rank_) {
        reduceTwo(buffer, incoming, buffer, count, type, op);
      } else {
        reduceTwo(buffer, buffer, incoming, count, type, op);
      }
    }
  }
  message = 40;
  if (rank_ < 2 * extra) {
    if (rank_ % 2 == 1) {
      stage_ = "recursive doubling (fold-out)";
      if (auto status = exchange(rank_ - 1, true, false); !status) return status;
    } else {
      transfers_.clear();
      transfers_.push_back({false, rank_ + 1, buffer, bytes, message, call.sequence, false});
      stage_ = "recursive doubling (fold-out)";
      if (auto status = runPlain(call, transfers_); !status) return status;
    }
  }
  return okResult();
}

Result<void> NetGroup::allReduce(const GroupCall& call, const void* send, void* recv,
                                 std::size_t count, DataType type, ReduceOp op) {
  NetAllReduce algorithm = allReduce_;
  auto* out = static_cast<std::byte*>(recv);
  const auto* in = static_cast<const std::byte*>(send);
  const std::size_t elem = dataTypeSize(type);
  const int n = size();
  if (algorithm == NetAllReduce::kAuto) algorithm = chooseNetAllReduce(n, count * elem);
  if (const unsigned bit = algorithm == NetAllReduce::kRing ? 1U : 2U;
      (loggedChoices_ & bit) == 0) {
    loggedChoices_ |= bit;  // once per algorithm, not per call
    TORUS_LOG(Debug, Tuning, "algorithm chosen", {"op", "allReduce"}, {"group", groupId_},
              {"ranks", n}, {"bytes", count * elem},
              {"algorithm", algorithm == NetAllReduce::kRing ? "ring" : "recursive-doubling"});
  }
  if (n == 1 || count == 0) {
    if (out != in && count > 0) std::memcpy(out, in, count * elem);
    return okResult();
  }
  if (algorithm == NetAllReduce::kRecursiveDoubling) {
    if (out != in) std::memcpy(out, in, count * elem);
    return recursiveDoubling(call, out, count, type, op);
  }
  const auto offsets = chunkOffsets(count, elem, n);
  const std::size_t slice = sliceBytes(largestChunk(offsets), 2 * static_cast<std::size_t>(n));
  const std::size_t slicesPerChunk =
      std::max<std::size_t>(1, (largestChunk(offsets) + slice - 1) / slice);
  if (auto status = ringReduceScatter(call, in, offsets, elem, type, op, out, false, 0, slice);
      !status) {
    return status;
  }
  const auto afterScatter =
      static_cast<std::uint32_t>(static_cast<std::size_t>(n - 1) * slicesPerChunk);
  return ringAllGather(call, out, offsets, afterScatter, slice);
}

Result<void> NetGroup::reduceScatter(const GroupCall& call, const void* send, void* recv,
                                     std::size_t recvCount, DataType type, ReduceOp op) {
  const std::size_t elem = dataTypeSize(type);
  const std::size_t bytes = recvCount * elem;
  const int n = size();
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  if (n == 1 || bytes == 0) {
    if (out != in && bytes > 0) std::memcpy(out, in, bytes);
    return okResult();
  }
  std::vector<std::size_t> offsets(static_cast<std::size_t>(n) + 1);
  for (int c = 0; c <= n; ++c)
    offsets[static_cast<std::size_t>(c)] = static_cast<std::size_t>(c) * bytes;
  const std::size_t slice = sliceBytes(bytes, static_cast<std::size_t>(n));
  return ringReduceScatter(call, in, offsets, elem, type, op, out, true, 0, slice);
}

Result<void> NetGroup::allGather(const GroupCall& call, const void* send, void* recv,
                                 std::size_t sendCount, DataType type) {
  const std::size_t bytes = sendCount * dataTypeSize(type);
  const int n = size();
  auto* out = static_cast<std::byte*>(recv);
  std::byte* mine = out + static_cast<std::size_t>(rank_) * bytes;
  if (bytes > 0 && mine != send) std::memcpy(mine, send, bytes);
  if (n == 1 || bytes == 0) return okResult();
  std::vector<std::size_t> offsets(static_cast<std::size_t>(n) + 1);
  for (int c = 0; c <= n; ++c)
    offsets[static_cast<std::size_t>(c)] = static_cast<std::size_t>(c) * bytes;
  return ringAllGather(call, out, offsets, 0, sliceBytes(bytes, static_cast<std::size_t>(n)));
}

// Pairwise exchange, all at once: every rank posts its n-1 receives and n-1 sends together and
// lets the provider schedule them. In place, the input is copied aside first.
Result<void> NetGroup::allToAll(const GroupCall& call, const void* send, void* recv,
                                std::size_t countPerRank, DataType type) {
  const std::size_t bytes = countPerRank * dataTypeSize(type);
  const int n = size();
  auto* out = static_cast<std::byte*>(recv);
  const auto* in = static_cast<const std::byte*>(send);
  const std::size_t total = bytes * static_cast<std::size_t>(n);
  if (bytes == 0) return okResult();
  if (in == out) {
    std::byte* copy = scratch(total);
    std::memcpy(copy, in, total);
    in = copy;
  }
  const std::size_t slice = sliceBytes(bytes, 1);
  const auto mine = static_cast<std::size_t>(rank_) * bytes;
  std::memcpy(out + mine, in + mine, bytes);
  transfers_.clear();
  for (int step = 1; step < n; ++step) {
    const int to = wrap(rank_ + step, n);
    const int from = wrap(rank_ - step, n);
    for (std::size_t k = 0; k * slice < bytes; ++k) {
      const std::size_t len = std::min(slice, bytes - k * slice);
      transfers_.push_back({false, from, out + static_cast<std::size_t>(from) * bytes + k * slice,
                            len, static_cast<std::uint32_t>(k), call.sequence, false});
      transfers_.push_back(
          {true, to, const_cast<std::byte*>(in) + static_cast<std::size_t>(to) * bytes + k * slice,
           len, static_cast<std::uint32_t>(k), call.sequence, false});
    }
  }
  stage_ = "pairwise exchange";
  return runPlain(call, transfers_);
}

// Binomial tree from the root: in round k the ranks that already have the data (relative rank
// below 2^k) send it to relative rank + 2^k.
Result<void> NetGroup::broadcast(const GroupCall& call, const void* send, void* recv,
                                 std::size_t count, DataType type, int root) {
  const std::size_t bytes = count * dataTypeSize(type);
  const int n = size();
  auto* out = static_cast<std::byte*>(recv);
  if (rank_ == root && bytes > 0 && out != send) std::memcpy(out, send, bytes);
  if (n == 1) return okResult();
  const int relative = wrap(rank_ - root, n);
  const std::size_t slice = sliceBytes(bytes, 1);
  const auto addAll = [&](bool isSend, int peer) {
    std::uint32_t k = 0;
    std::size_t offset = 0;
    do {
      const std::size_t len = std::min(slice, bytes - offset);
      transfers_.push_back({isSend, peer, out + offset, len, k++, call.sequence, false});
      offset += len;
    } while (offset < bytes);
  };
  int mask = 1;
  while (mask < n) {
    if (relative & mask) {
      transfers_.clear();
      addAll(false, wrap(relative - mask + root, n));
      stage_ = "tree broadcast";
      if (auto status = runPlain(call, transfers_); !status) return status;
      break;
    }
    mask *= 2;
  }
  transfers_.clear();
  for (mask /= 2; mask > 0; mask /= 2) {
    if (relative + mask < n) addAll(true, wrap(relative + mask + root, n));
  }
  stage_ = "tree broadcast";
  return runPlain(call, transfers_);
}

// Binomial tree towards the root: a rank first folds in what its subtree sends, then passes the
// partial result to its parent.
Result<void> NetGroup::reduce(const GroupCall& call, const void* send, void* recv,
                              std::size_t count, DataType type, ReduceOp op, int root) {
  const int n = size();
  const std::size_t bytes = count * dataTypeSize(type);
  const int relative = wrap(rank_ - root, n);
  // The running result: the root's output, or a private buffer elsewhere.
  std::byte* incoming = scratch(2 * bytes);
  std::byte* partial = rank_ == root ? static_cast<std::byte*>(recv) : incoming + bytes;
  if (bytes > 0 && partial != send) std::memcpy(partial, send, bytes);
  if (n == 1) return okResult();
  std::uint32_t round = 0;
  for (int mask = 1; mask < n; mask *= 2, ++round) {
    transfers_.clear();
    if (relative & mask) {
      transfers_.push_back(
          {true, wrap(relative - mask + root, n), partial, bytes, round, call.sequence, false});
      stage_ = "tree reduce";
      return runPlain(call, transfers_);
    }
    if (relative + mask < n) {
      transfers_.push_back(
          {false, wrap(relative + mask + root, n), incoming, bytes, round, call.sequence, false});
      stage_ = "tree reduce";
      if (auto status = runPlain(call, transfers_); !status) return status;
      reduceTwo(partial, partial, incoming, count, type, op);
    }
  }
  return okResult();
}

}  // namespace torus::coll
