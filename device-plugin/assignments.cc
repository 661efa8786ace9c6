#include "device-plugin/assignments.h"

#include <algorithm>

namespace torus::plugin {

topology::CoreSet coresInUse(const topology::Node& node, const Assignments& assignments) {
  topology::CoreSet cores;
  for (const auto& [kind, ids] : assignments.held)
    cores |= coresOfIds(kind, node, ids);
  return cores;
}

topology::CoreSet blockedIds(ResourceKind kind, const topology::Node& node,
                             const Assignments& assignments) {
  // What the other resources hold, as cores.
  topology::CoreSet others;
  for (const auto& [holder, ids] : assignments.held) {
    const bool sameCounting = countsDevices(holder) == countsDevices(kind);
    if (holder != kind && !sameCounting) others |= coresOfIds(holder, node, ids);
    // neuron and neurondevice are aliases: each blocks the other's devices as well.
    if (holder != kind && sameCounting) others |= coresOfIds(holder, node, ids);
  }
  if (!countsDevices(kind)) return others & node.allCores();
  return node.devicesOfCores(others);
}

std::optional<SharedCores> sharedBetweenPods(const topology::Node& node,
                                             const topology::CoreSet& cores,
                                             const std::vector<Holder>& holders) {
  std::map<std::string, topology::CoreSet> byPod;
  for (const Holder& holder : holders)
    byPod[holder.pod] |= coresOfIds(holder.kind, node, holder.ids) & cores;
  SharedCores shared;
  topology::CoreSet seen;
  for (const auto& [pod, held] : byPod) {
    shared.cores |= seen & held;
    seen |= held;
  }
  if (shared.cores.empty()) return std::nullopt;
  for (const Holder& holder : holders) {
    if (coresOfIds(holder.kind, node, holder.ids).intersects(shared.cores)) {
      shared.holders.push_back(holder);
    }
  }
  std::ranges::stable_sort(shared.holders, {}, &Holder::pod);
  return shared;
}

std::string describeHolders(const std::vector<Holder>& holders) {
  std::string text;
  for (const Holder& holder : holders) {
    if (!text.empty()) text += ", ";
    text += holder.pod + " (" + std::string(resourceName(holder.kind)) + " " +
            holder.ids.toRangeString() + ")";
  }
  return text;
}

void AssignmentTracker::replaceFromKubelet(Assignments listed, Clock::time_point now) {
  bool changed = false;
  {
    std::lock_guard lock(mutex_);
    // An allocation kubelet lists is tracked through kubelet from now on; one it never lists
    // within the grace period belonged to a container that never started.
    std::erase_if(pending_, [&](const Pending& p) {
      const auto it = listed.held.find(p.kind);
      const bool seen = it != listed.held.end() && p.ids.isSubsetOf(it->second);
      return seen || now - p.at > grace_;
    });
    listed_ = std::move(listed);
    changed = publishLocked(now);
    // The first answer is news even when it lists nothing: who holds what is known from now on.
    if (!kubeletListed_) {
      kubeletListed_ = true;
      changed = true;
    }
  }
  if (changed) notifier_.notify();
}

void AssignmentTracker::recordAllocate(ResourceKind kind, const topology::CoreSet& ids,
                                       Clock::time_point now) {
  bool changed = false;
  {
    std::lock_guard lock(mutex_);
    // Expired grants go now, not only when kubelet answers (it may be unreachable for hours),
    // and a repeated grant of the same ids renews the one entry: the list stays as long as the
    // distinct grants of one grace period, not one entry per Allocate.
    std::erase_if(pending_, [&](const Pending& p) {
      return now - p.at > grace_ || (p.kind == kind && p.ids == ids);
    });
    pending_.push_back({kind, ids, now});
    if (pending_.size() > kMaxPending) pending_.erase(pending_.begin());
    changed = publishLocked(now);
  }
  if (changed) notifier_.notify();
}

bool AssignmentTracker::kubeletListed() const {
  std::lock_guard lock(mutex_);
  return kubeletListed_;
}

std::size_t AssignmentTracker::pendingCount() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

Assignments AssignmentTracker::current(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  return currentLocked(now);
}

bool AssignmentTracker::publishLocked(Clock::time_point now) {
  // Compared with what subscribers last heard, so a pending allocation that silently expired
  // between two kubelet answers is announced too.
  Assignments latest = currentLocked(now);
  if (latest == published_) return false;
  published_ = std::move(latest);
  return true;
}

Assignments AssignmentTracker::currentLocked(Clock::time_point now) const {
  Assignments result = listed_;
  for (const Pending& p : pending_) {
    if (now - p.at <= grace_) result.held[p.kind] |= p.ids;
  }
  std::erase_if(result.held, [](const auto& entry) { return entry.second.empty(); });
  return result;
}

}  // namespace torus::plugin
