// ShmGroup's waits, in a header because they are templates inlined into the spin loop of every
// collective (shm_group.cc and shm_protocol.cc). Internal to node-runtime/collectives/shm.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include <sched.h>

#include "common/base/spin.h"
#include "node-runtime/collectives/shm/control_layout.h"
#include "node-runtime/collectives/shm/shm_group.h"

namespace torus::coll {

// Spins briefly (only when every rank has a CPU), then yields, then sleeps in growing steps,
// so oversubscribed ranks let the ones they wait for run. Every millisecond it checks the
// deadline, whether a pending peer has exited (pidfd readable) and whether any peer aborted.
template <typename Done, typename Pending>
Result<void> ShmGroup::waitUntil(const GroupCall& call, Done done, Pending pending) {
  if (done()) return okResult();
  const auto start = Clock::now();
  const auto deadline = start + call.timeout;
  auto nextCheck = start + kLivenessInterval;
  const unsigned spinLimit = spin_ ? 4000 : 0;
  const unsigned yieldLimit = spinLimit + 20000;
  std::chrono::microseconds nap{20};
  for (unsigned iteration = 0;; ++iteration) {
    if (done()) return okResult();
    if (iteration < spinLimit) {
      cpuRelax();
      continue;
    }
    if (iteration < yieldLimit) {
      ::sched_yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(1000));
    }
    if ((iteration & 15U) != 0 && iteration < yieldLimit) continue;
    const auto now = Clock::now();
    if (now < nextCheck) continue;
    nextCheck = now + kLivenessInterval;
    if (done()) return okResult();
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      RankSlot& peer = slot(layout_, r);
      if (std::atomic_ref<std::uint32_t>(peer.aborted).load(std::memory_order_acquire) != 0) {
        char reason[sizeof(peer.reason)];
        std::memcpy(reason, peer.reason, sizeof(reason));
        reason[sizeof(reason) - 1] = '\0';
        return makeError(ErrorCode::kAborted,
                         call.what() + ": rank " + label(r) + " gave up: " + reason);
      }
    }
    if (trouble_) {
      if (auto trouble = trouble_()) {
        return makeError(ErrorCode::kUnavailable, call.what() + ": " + *trouble);
      }
    }
    const std::vector<int> waitingFor = pending();
    if (status_ != nullptr) {
      std::lock_guard lock(status_->mutex);
      status_->waitingFor.clear();
      for (int r : waitingFor) {
        status_->waitingFor.push_back(labels_.empty() ? r : labels_[static_cast<std::size_t>(r)]);
      }
      if (waitPublished_ != nullptr) *waitPublished_ = true;
    }
    std::vector<int> dead;
    for (int r : waitingFor) {
      if (exited(r)) dead.push_back(r);
    }
    if (!dead.empty()) {
      // A killed rank cannot unlink its segments (tensors, staging): remove every name of
      // this session that it owned, so /dev/shm does not fill up with dead ranks' memory.
      for (int r : dead)
        segments_.unlinkOwnedBy(r);
      return makeError(ErrorCode::kUnavailable, call.what() + ": " + rankList(dead) + " exited");
    }
    if (now >= deadline) {
      return makeError(ErrorCode::kDeadlineExceeded,
                       call.what() + ": nothing from " + rankList(waitingFor) + " in " +
                           std::to_string(call.timeout.count()) + " ms");
    }
  }
}

template <typename Arrived>
Result<void> ShmGroup::waitForAll(const GroupCall& call, Arrived arrived) {
  auto done = [&] {
    for (int r = 0; r < size_; ++r) {
      if (!arrived(r)) return false;
    }
    return true;
  };
  auto pending = [&] {
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r) {
      if (!arrived(r)) missing.push_back(r);
    }
    return missing;
  };
  return waitUntil(call, done, pending);
}

}  // namespace torus::coll
