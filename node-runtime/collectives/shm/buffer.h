// Buffer: a runtime-owned tensor in shared memory (as a Neuron runtime owns device memory).
// Collectives on it run without staging copies: the peers on the host map it by reference.
// Valid after its communicator is gone (it then is plain memory), released when destroyed: the
// peers drop their mappings at their next operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "node-runtime/collectives/shm/shm_segment.h"

namespace torus::coll {

class SegmentRegistry;

class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;
  ~Buffer();

  std::byte* data() const { return segment_.data(); }
  std::size_t size() const { return bytes_; }
  template <typename T>
  std::span<T> as() const {
    return {reinterpret_cast<T*>(data()), bytes_ / sizeof(T)};
  }

 private:
  friend class SegmentSpace;  // makes them
  friend class Groups;        // registers them with libfabric
  std::shared_ptr<SegmentRegistry> registry_;
  ShmSegment segment_;
  std::shared_ptr<void> registration_;  // libfabric's, when the provider needs one; after segment_
  std::uint64_t id_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace torus::coll
