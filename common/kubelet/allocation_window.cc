#include "common/kubelet/allocation_window.h"

#include <algorithm>

namespace torus::kubelet {

void AllocationWindow::opened(std::string_view resource, std::chrono::milliseconds listWait) {
  std::unique_lock lock(mutex_);
  // Bounded: a List that hangs (kubelet stuck) must not stall kubelet's admissions with it.
  changed_.wait_for(lock, listWait, [&] { return listing_ == 0; });
  const Clock::time_point now = Clock::now();
  auto it = calls_.find(resource);
  if (it == calls_.end()) it = calls_.emplace(std::string(resource), Calls{}).first;
  it->second.openedAt = now;
  ++version_;
  changed_.notify_all();
}

void AllocationWindow::closed(std::string_view resource) {
  std::lock_guard lock(mutex_);
  const Clock::time_point now = Clock::now();
  auto it = calls_.find(resource);
  if (it == calls_.end()) it = calls_.emplace(std::string(resource), Calls{}).first;
  it->second.openedAt.reset();
  it->second.closedAt = now;
  ++version_;
  changed_.notify_all();
}

std::optional<AllocationWindow::Clock::time_point> AllocationWindow::unsafeUntil(
    Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  return unsafeUntilLocked(now);
}

std::optional<AllocationWindow::Clock::time_point> AllocationWindow::unsafeUntilLocked(
    Clock::time_point now) const {
  std::optional<Clock::time_point> until;
  const auto later = [&](Clock::time_point at) {
    if (at > now) until = until ? std::max(*until, at) : at;
  };
  for (const auto& [resource, calls] : calls_) {
    // Every resource counts: kubelet's rebuild drops the in-flight ids of all of them at once.
    if (calls.openedAt) later(*calls.openedAt + options_.abandon);
    if (calls.closedAt) later(*calls.closedAt + options_.margin);
  }
  return until;
}

bool AllocationWindow::beginList(std::stop_token stop, std::chrono::milliseconds limit,
                                 std::chrono::milliseconds* waited) {
  const auto started = Clock::now();
  const auto deadline = started + limit;
  std::unique_lock lock(mutex_);
  bool safe = false;
  while (!stop.stop_requested()) {
    const auto now = Clock::now();
    const auto until = unsafeUntilLocked(now);
    if (!until) {
      safe = true;
      ++listing_;
      break;
    }
    if (now >= deadline) break;
    // A call that opens or closes meanwhile moves the time; look again then.
    const std::uint64_t seen = version_;
    changed_.wait_until(lock, stop, std::min(*until, deadline), [&] { return version_ != seen; });
  }
  if (waited != nullptr) {
    *waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  }
  return safe;
}

void AllocationWindow::endList() {
  std::lock_guard lock(mutex_);
  if (listing_ > 0) --listing_;
  ++version_;
  changed_.notify_all();
}

}  // namespace torus::kubelet
