// PodCache: the demands of pods seen in filter/prioritize/preempt, by UID. kube-scheduler's bind
// call carries only the pod's name, namespace and UID, so bind looks the demand up here. Bounded:
// the oldest entries go first when it is full.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "scheduler-extender/state/pod_demand.h"

namespace torus::extender {

class PodCache {
 public:
  explicit PodCache(std::size_t capacity = 50'000) : capacity_(capacity) {}

  void remember(const PodDemand& pod);
  std::optional<PodDemand> find(const std::string& uid) const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::map<std::string, PodDemand> byUid_;
  std::deque<std::string> order_;
};

}  // namespace torus::extender
