// SegmentRegistry: the process-local index of this rank's own shared-memory segments (tensors
// and staging), by address and by id, and the ids freed since the peers were last told.
// Internal to node-runtime/collectives; shared by a communicator and its Buffers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "node-runtime/collectives/core/coll_types.h"

namespace torus::coll {

class SegmentRegistry {
 public:
  std::uint64_t nextId() { return next_.fetch_add(1); }
  void add(std::uint64_t id, std::byte* base, std::size_t size) {
    std::lock_guard lock(mutex_);
    byBase_[base] = Entry{id, size};
    byId_[id] = base;
  }
  void remove(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    if (auto it = byId_.find(id); it != byId_.end()) {
      byBase_.erase(it->second);
      byId_.erase(it);
      freed_.push_back(id);
    }
  }
  std::vector<std::uint64_t> takeFreed() {
    std::lock_guard lock(mutex_);
    return std::exchange(freed_, {});
  }
  // The segment holding [p, p + bytes), if p is inside one of ours.
  std::optional<SegmentRef> find(const void* p, std::size_t bytes) const {
    std::lock_guard lock(mutex_);
    const auto* address = static_cast<const std::byte*>(p);
    auto it = byBase_.upper_bound(address);
    if (it == byBase_.begin()) return std::nullopt;
    --it;
    const std::size_t offset = static_cast<std::size_t>(address - it->first);
    if (offset + bytes > it->second.size) return std::nullopt;
    return SegmentRef{it->second.id, offset};
  }
  std::pair<std::byte*, std::size_t> lookup(std::uint64_t id) const {
    std::lock_guard lock(mutex_);
    auto it = byId_.find(id);
    if (it == byId_.end()) return {nullptr, 0};
    return {it->second, byBase_.at(it->second).size};
  }

 private:
  struct Entry {
    std::uint64_t id;
    std::size_t size;
  };
  mutable std::mutex mutex_;
  std::atomic<std::uint64_t> next_{1};
  std::map<const std::byte*, Entry, std::less<>> byBase_;
  std::map<std::uint64_t, std::byte*> byId_;
  std::vector<std::uint64_t> freed_;
};

}  // namespace torus::coll
