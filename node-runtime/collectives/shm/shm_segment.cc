#include "node-runtime/collectives/shm/shm_segment.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/base/unique_fd.h"

namespace torus::coll {
namespace {

Error osError(const std::string& what, const std::string& name, int err) {
  const ErrorCode code = err == ENOMEM || err == ENOSPC ? ErrorCode::kResourceExhausted
                         : err == ENOENT                ? ErrorCode::kNotFound
                         : err == EACCES                ? ErrorCode::kPermissionDenied
                                                        : ErrorCode::kInternal;
  return makeError(code, what + " " + name + ": " + std::strerror(err));
}

}  // namespace

Result<ShmSegment> ShmSegment::create(const std::string& name, std::size_t bytes) {
  UniqueFd fd(::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600));
  if (!fd) return osError("shm_open(create)", name, errno);
  // The name exists from here on: unlink it on every error path.
  const auto fail = [&](const std::string& what, int err) {
    ::shm_unlink(name.c_str());
    return osError(what, name, err);
  };
  const std::size_t mapped = bytes == 0 ? 1 : bytes;
  // posix_fallocate reserves the pages now, so running out of /dev/shm is an error here rather
  // than a SIGBUS in the middle of a collective.
  if (int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(mapped)); err != 0) {
    return fail("reserving " + std::to_string(mapped) + " bytes for", err);
  }
  void* data = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (data == MAP_FAILED) return fail("mmap", errno);
  return ShmSegment(name, static_cast<std::byte*>(data), mapped, true);
}

Result<ShmSegment> ShmSegment::open(const std::string& name) {
  UniqueFd fd(::shm_open(name.c_str(), O_RDWR, 0600));
  if (!fd) return osError("shm_open", name, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return osError("fstat", name, errno);
  if (st.st_size <= 0) {
    return makeError(ErrorCode::kFailedPrecondition, "shared memory " + name + " is empty");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (data == MAP_FAILED) return osError("mmap", name, errno);
  return ShmSegment(name, static_cast<std::byte*>(data), size, false);
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      owner_(std::exchange(other.owner_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    reset();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    owner_ = std::exchange(other.owner_, false);
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  reset();
}

void ShmSegment::unlinkNow() {
  if (owner_) ::shm_unlink(name_.c_str());
  owner_ = false;
}

void ShmSegment::reset() {
  if (data_ != nullptr) ::munmap(data_, size_);
  unlinkNow();
  data_ = nullptr;
  size_ = 0;
}

}  // namespace torus::coll
