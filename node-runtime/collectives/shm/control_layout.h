// The layout of a ShmGroup's shared control segment (its slots, arrival counters and per-rank
// records) and the accessors its waits and collectives use; the session's naming helpers
// (deriveSession, hex) for the segments of a communicator and its splits. Internal to
// node-runtime/collectives.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "node-runtime/collectives/core/coll_types.h"

namespace torus::coll {

// ---- shared control segment ----

// Layout: header, one arrival line per rank, one slot per rank, one mailbox per (sender,
// receiver). Every field another process writes is its own cache line, so spinning readers do
// not disturb the writer's other fields. Fields are plain integers accessed with atomic_ref.
struct alignas(64) ArrivalLine {
  std::uint64_t epoch;
};
constexpr std::size_t kFreedRing = 64;
// The small-message path (runInline): the line a waiting peer spins on also carries the call's
// signature and the first bytes of data, so an 8-byte AllReduce moves one cache line per peer
// instead of four (arrival, descriptor, data).
// What a call must agree on with its peers: an OpDescriptor without the buffer references.
struct CallSignature {
  std::uint64_t sequence;
  std::uint64_t count;
  OpKind op;
  std::int32_t root;
  DataType type;
  ReduceOp reduceOp;

  static CallSignature of(const OpDescriptor& d) {
    return {d.sequence, d.count, d.op, d.root, d.type, d.reduceOp};
  }
  OpDescriptor descriptor() const {
    OpDescriptor d;
    d.sequence = sequence;
    d.count = count;
    d.op = op;
    d.root = root;
    d.type = type;
    d.reduceOp = reduceOp;
    return d;
  }
};
struct alignas(64) InlineBlock {
  std::uint64_t epoch;  // the arrival this block belongs to; stored last, with release
  CallSignature call;
  std::byte data[kInlineBytes];
};
static_assert(offsetof(InlineBlock, data) + 8 <= 64,
              "an 8-byte payload must share the cache line of the epoch peers spin on");
struct alignas(64) RankSlot {
  std::int32_t pid;
  std::uint32_t aborted;
  OpDescriptor desc[2];  // by sequence parity: a slow peer may still read the previous one
  char reason[384];
  // Segments this rank has freed, so peers drop their mappings (ids are never reused).
  std::uint64_t freedCount;
  std::uint64_t freed[kFreedRing];
  // Small-message path, by sequence parity: a slow peer may still read the previous one.
  InlineBlock inlineBlock[2];
};
struct alignas(64) Mailbox {
  std::uint64_t posted;  // messages the sender has published
  std::uint64_t pad0[7];
  std::uint64_t taken;  // messages the receiver has copied out
  std::uint64_t bytes;
  SegmentRef ref;
};
struct alignas(64) ControlLayout {
  std::uint64_t magic;
  std::uint64_t size;
};

constexpr std::uint64_t kMagic = 0x746f7275732d6331ULL;  // "torus-c1"
constexpr auto kLivenessInterval = std::chrono::milliseconds(1);

inline std::size_t controlBytes(int size) {
  const auto n = static_cast<std::size_t>(size);
  return sizeof(ControlLayout) + n * sizeof(ArrivalLine) + n * sizeof(RankSlot) +
         n * n * sizeof(Mailbox);
}
inline ArrivalLine& arrival(ControlLayout* layout, int rank) {
  return reinterpret_cast<ArrivalLine*>(layout + 1)[rank];
}
inline RankSlot& slot(ControlLayout* layout, int rank) {
  auto* slots = reinterpret_cast<RankSlot*>(&arrival(layout, static_cast<int>(layout->size)));
  return slots[rank];
}
inline Mailbox& mailbox(ControlLayout* layout, int from, int to) {
  const int n = static_cast<int>(layout->size);
  auto* boxes = reinterpret_cast<Mailbox*>(&slot(layout, n));
  return boxes[from * n + to];
}

inline std::uint64_t loadAcquire(std::uint64_t& value) {
  return std::atomic_ref<std::uint64_t>(value).load(std::memory_order_acquire);
}
inline void storeRelease(std::uint64_t& value, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(value).store(v, std::memory_order_release);
}

std::uint64_t deriveSession(std::uint64_t session, std::uint64_t a, std::uint64_t b);

inline std::string hex(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace torus::coll
