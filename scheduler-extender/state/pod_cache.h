// PodCache: the demands of pods seen in filter/prioritize/preempt, by UID. kube-scheduler's bind
// call carries only the pod's name, namespace and UID, so bind looks the demand up here.
//
// Bounded by count and by bytes (anyone who reaches the port can send pods with long names); the
// oldest entries go first. Only what bind uses is kept.
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
  explicit PodCache(std::size_t capacity = 50'000, std::size_t capacityBytes = 32 * 1024 * 1024)
      : capacity_(capacity), capacityBytes_(capacityBytes) {}

  void remember(const PodDemand& pod);
  std::optional<PodDemand> find(const std::string& uid) const;
  std::size_t size() const;
  std::size_t bytes() const;  // an estimate of what the entries hold, map overhead included

 private:
  void forgetOldestLocked();

  const std::size_t capacity_;
  const std::size_t capacityBytes_;
  mutable std::mutex mutex_;
  std::map<std::string, PodDemand> byUid_;
  std::deque<std::string> order_;
  std::size_t bytes_ = 0;
};

}  // namespace torus::extender
