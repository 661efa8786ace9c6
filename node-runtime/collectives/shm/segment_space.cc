#include "node-runtime/collectives/shm/segment_space.h"

#include <filesystem>
#include <system_error>

#include <sys/mman.h>

#include "node-runtime/collectives/shm/control_layout.h"

namespace torus::coll {

Buffer::~Buffer() {
  if (registry_ && id_ != 0) registry_->remove(id_);
}

std::string SegmentSpace::name(int owner, std::uint64_t id) const {
  return "/torus-" + hex(session_) + "-" + std::to_string(owner) + "-" + std::to_string(id);
}

Result<Buffer> SegmentSpace::allocate(std::size_t bytes, const std::string& what) {
  Buffer buffer;
  buffer.id_ = registry_->nextId();
  auto segment = ShmSegment::create(name(rank_, buffer.id_), bytes);
  if (!segment) {
    return std::move(segment).error().withContext("allocating a " + std::to_string(bytes) +
                                                  "-byte tensor on " + what);
  }
  buffer.segment_ = std::move(*segment);
  buffer.bytes_ = bytes;
  buffer.registry_ = registry_;
  registry_->add(buffer.id_, buffer.segment_.data(), buffer.segment_.size());
  return buffer;
}

void SegmentSpace::unlinkOwnedBy(int owner) const {
  const std::string prefix = name(owner, 0).substr(1);  // "torus-<session>-<rank>-0"
  const std::string stem = prefix.substr(0, prefix.size() - 1);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(stem, 0) == 0) ::shm_unlink(("/" + file).c_str());
  }
}

}  // namespace torus::coll
