#include "scheduler-extender/state/pod_cache.h"

namespace torus::extender {

void PodCache::remember(const PodDemand& pod) {
  if (pod.uid.empty()) return;
  std::lock_guard lock(mutex_);
  if (byUid_.insert_or_assign(pod.uid, pod).second) order_.push_back(pod.uid);
  while (order_.size() > capacity_) {
    byUid_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<PodDemand> PodCache::find(const std::string& uid) const {
  std::lock_guard lock(mutex_);
  const auto it = byUid_.find(uid);
  if (it == byUid_.end()) return std::nullopt;
  return it->second;
}

}  // namespace torus::extender
