#include "scheduler-extender/state/pod_cache.h"

namespace torus::extender {
namespace {

// What one entry costs: its strings (twice the UID: map key and order), plus the map node and
// the fixed part of PodDemand.
std::size_t entryBytes(const PodDemand& pod) {
  return sizeof(PodDemand) + 64 + 2 * pod.uid.size() + pod.name.size() + pod.namespace_.size() +
         pod.resourceName.size();
}

}  // namespace

void PodCache::remember(const PodDemand& pod) {
  if (pod.uid.empty()) return;
  std::lock_guard lock(mutex_);
  const std::size_t size = entryBytes(pod);
  if (auto it = byUid_.find(pod.uid); it != byUid_.end()) {
    bytes_ -= entryBytes(it->second);
    it->second = pod;
  } else {
    byUid_.emplace(pod.uid, pod);
    order_.push_back(pod.uid);
  }
  bytes_ += size;
  while (!order_.empty() && (order_.size() > capacity_ || bytes_ > capacityBytes_)) {
    forgetOldestLocked();
  }
}

void PodCache::forgetOldestLocked() {
  if (const auto it = byUid_.find(order_.front()); it != byUid_.end()) {
    bytes_ -= entryBytes(it->second);
    byUid_.erase(it);
  }
  order_.pop_front();
}

std::optional<PodDemand> PodCache::find(const std::string& uid) const {
  std::lock_guard lock(mutex_);
  const auto it = byUid_.find(uid);
  if (it == byUid_.end()) return std::nullopt;
  return it->second;
}

std::size_t PodCache::size() const {
  std::lock_guard lock(mutex_);
  return byUid_.size();
}

std::size_t PodCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace torus::extender
