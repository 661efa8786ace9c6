#include "common/base/memory_budget.h"

#include <utility>

#include <malloc.h>

namespace torus {

MemoryBudget::Lease::Lease(Lease&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), bytes_(other.bytes_) {}

MemoryBudget::Lease& MemoryBudget::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (budget_ != nullptr) budget_->release(bytes_);
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = other.bytes_;
  }
  return *this;
}

MemoryBudget::Lease::~Lease() {
  if (budget_ != nullptr) budget_->release(bytes_);
}

MemoryBudget::MemoryBudget(std::size_t totalBytes, std::size_t trimAbove)
    : total_(totalBytes), trimAbove_(trimAbove) {}

std::optional<MemoryBudget::Lease> MemoryBudget::reserve(std::size_t bytes,
                                                         std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  const bool room = freed_.wait_for(
      lock, wait, [&] { return inUse_ == 0 || (inUse_ + bytes <= total_ && bytes <= total_); });
  if (!room) return std::nullopt;
  inUse_ += bytes;
  return Lease(this, bytes);
}

std::size_t MemoryBudget::inUse() const {
  std::lock_guard lock(mutex_);
  return inUse_;
}

void MemoryBudget::release(std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    inUse_ -= bytes;
  }
  freed_.notify_all();
  if (bytes >= trimAbove_) ::malloc_trim(0);
}

}  // namespace torus
