#include "scheduler-extender/verbs/bind_backlog.h"

namespace torus::extender {

void BindBacklog::arrive() {
  std::lock_guard lock(mutex_);
  ++inFlight_;
}

void BindBacklog::leave() {
  {
    std::lock_guard lock(mutex_);
    --inFlight_;
  }
  roomMade_.notify_all();
}

std::chrono::steady_clock::duration BindBacklog::waitForRoom() {
  std::unique_lock lock(mutex_);
  if (inFlight_ < limits_.inFlight) return {};
  const auto started = std::chrono::steady_clock::now();
  roomMade_.wait_for(lock, limits_.maxWait, [&] { return inFlight_ < limits_.inFlight; });
  const auto waited = std::chrono::steady_clock::now() - started;
  ++waits_;
  secondsWaited_ += std::chrono::duration<double>(waited).count();
  return waited;
}

std::size_t BindBacklog::inFlight() const {
  std::lock_guard lock(mutex_);
  return inFlight_;
}

std::uint64_t BindBacklog::waits() const {
  std::lock_guard lock(mutex_);
  return waits_;
}

double BindBacklog::secondsWaited() const {
  std::lock_guard lock(mutex_);
  return secondsWaited_;
}

}  // namespace torus::extender
