// SegmentSpace: the POSIX shared-memory names of one rank of one communicator session
// ("/torus-<session>-<rank>-<id>") — runtime-owned tensors, staging areas — and the registry
// that finds which of them holds an address, so peers on the host can map them by reference.
//
// Owns: the registry (shared with the Buffers it hands out, which outlive it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/base/result.h"
#include "node-runtime/collectives/shm/buffer.h"
#include "node-runtime/collectives/shm/segment_registry.h"

namespace torus::coll {

class SegmentSpace {
 public:
  SegmentSpace(std::uint64_t session, int rank)
      : session_(session), rank_(rank), registry_(std::make_shared<SegmentRegistry>()) {}

  // The name of segment `id` of rank `owner` in this session.
  std::string name(int owner, std::uint64_t id) const;
  // A runtime-owned tensor of `bytes` bytes in a new segment of this rank; `what` names the
  // communicator in errors.
  Result<Buffer> allocate(std::size_t bytes, const std::string& what);
  // Removes every name of this session that `owner` made: a rank that was killed cannot (pages
  // still mapped by a survivor go away with its mapping).
  void unlinkOwnedBy(int owner) const;

  SegmentRegistry& registry() { return *registry_; }
  const SegmentRegistry& registry() const { return *registry_; }

 private:
  std::uint64_t session_;
  int rank_;
  std::shared_ptr<SegmentRegistry> registry_;
};

}  // namespace torus::coll
