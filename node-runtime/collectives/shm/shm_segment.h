// ShmSegment: one POSIX shared-memory object mapped into this process.
//
// Owns: the mapping (munmap on destruction) and, for the creator, the name (shm_unlink on
// destruction unless released earlier with unlinkNow()). Does not own: what lives inside it or
// who else maps it; the communicator keeps the naming scheme and the peers' mappings.
#pragma once

#include <cstddef>
#include <string>

#include "common/base/result.h"

namespace torus::coll {

class ShmSegment {
 public:
  // Creates `name` (which must not exist) with `bytes` zero-filled bytes, read-write.
  static Result<ShmSegment> create(const std::string& name, std::size_t bytes);
  // Maps an existing `name` whole (its size comes from fstat).
  static Result<ShmSegment> open(const std::string& name);

  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // Removes the name now (the mapping stays valid); later peers can no longer open it.
  void unlinkNow();

 private:
  ShmSegment(std::string name, std::byte* data, std::size_t size, bool owner)
      : name_(std::move(name)), data_(data), size_(size), owner_(owner) {}
  void reset();

  std::string name_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool owner_ = false;
};

}  // namespace torus::coll
