#include "scheduler-extender/state/scheduling_cycles.h"

#include <algorithm>
#include <functional>

namespace torus::extender {
namespace {

std::uint64_t nameHash(const std::string& name) {
  return std::hash<std::string>()(name);
}

}  // namespace

void SchedulingCycles::filtered(const std::string& podUid,
                                const std::vector<std::string>& passedNodes,
                                Clock::time_point now) {
  std::vector<std::uint64_t> passed;
  passed.reserve(passedNodes.size());
  for (const std::string& node : passedNodes)
    passed.push_back(nameHash(node));
  std::sort(passed.begin(), passed.end());
  std::lock_guard lock(mutex_);
  dropExpiredLocked(now);
  if (auto it = byUid_.find(podUid); it != byUid_.end()) eraseLocked(it);
  // A filter that passed no node leaves nothing to bind: kept, thousands of unschedulable pods
  // retried would push out the cycle of a pod whose bind is merely slow.
  if (passed.empty()) return;
  while (byUid_.size() >= limits_.capacity && !order_.empty()) {
    eraseLocked(byUid_.find(order_.front()));
  }
  order_.push_back(podUid);
  byUid_.emplace(podUid, Cycle{std::move(passed), now, std::nullopt, std::prev(order_.end())});
}

std::string SchedulingCycles::bindRefusal(const std::string& podUid, const std::string& podKey,
                                          const std::string& node, Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  const auto it = byUid_.find(podUid);
  if (it == byUid_.end() || now - it->second.filteredAt > limits_.filterTtl) {
    ++refused_;
    return "bind of pod " + podKey + " to " + node +
           " refused: this extender's filter has not passed the pod in a current scheduling "
           "cycle (it restarted since, or the cycle is too old); kube-scheduler schedules the "
           "pod again";
  }
  if (!std::binary_search(it->second.passed.begin(), it->second.passed.end(), nameHash(node))) {
    ++refused_;
    return "bind of pod " + podKey + " to " + node +
           " refused: this extender's filter did not pass that node for the pod in its "
           "scheduling cycle";
  }
  return "";
}

void SchedulingCycles::hold(const std::string& podUid, const std::string& node,
                            topology::CoreSet cores, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  const auto it = byUid_.find(podUid);
  if (it == byUid_.end()) return;  // no filter of ours: nothing to bind, so nothing to hold
  it->second.hold = Hold{node, std::move(cores), now};
}

HeldCores SchedulingCycles::heldForOthers(const std::string& podUid, Clock::time_point now) const {
  HeldCores held;
  std::lock_guard lock(mutex_);
  for (const auto& [uid, cycle] : byUid_) {
    if (!cycle.hold || uid == podUid || now - cycle.hold->since > limits_.holdTtl) continue;
    held[cycle.hold->node] |= cycle.hold->cores;
  }
  return held;
}

topology::CoreSet SchedulingCycles::heldOnNodeForOthers(const std::string& podUid,
                                                        const std::string& node,
                                                        Clock::time_point now) const {
  const HeldCores held = heldForOthers(podUid, now);
  const auto onNode = held.find(node);
  return onNode == held.end() ? topology::CoreSet{} : onNode->second;
}

void SchedulingCycles::finished(const std::string& podUid) {
  std::lock_guard lock(mutex_);
  if (auto it = byUid_.find(podUid); it != byUid_.end()) eraseLocked(it);
}

std::size_t SchedulingCycles::size() const {
  std::lock_guard lock(mutex_);
  return byUid_.size();
}

std::uint64_t SchedulingCycles::unfilteredBindsRefused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

void SchedulingCycles::eraseLocked(std::unordered_map<std::string, Cycle>::iterator it) {
  order_.erase(it->second.age);
  byUid_.erase(it);
}

void SchedulingCycles::dropExpiredLocked(Clock::time_point now) {
  while (!order_.empty()) {
    const auto oldest = byUid_.find(order_.front());
    if (now - oldest->second.filteredAt <= limits_.filterTtl) break;
    eraseLocked(oldest);
  }
}

}  // namespace torus::extender
