#include "scheduler-extender/kube/cluster_mirror.h"

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/contracts/topology_annotation.h"
#include "common/kube/object_fields.h"

namespace torus::extender {
namespace {

using nlohmann::json;

std::string objectName(const json& object) {
  const std::string nameSpace = kube::stringAt(object, {"metadata", "namespace"});
  const std::string name = kube::stringAt(object, {"metadata", "name"});
  return (nameSpace.empty() ? "" : nameSpace + "/") + (name.empty() ? "?" : name);
}

std::string uidOf(const json& object) {
  return kube::stringAt(object, {"metadata", "uid"});
}

}  // namespace

void ClusterMirror::upsertNode(const json& object) {
  auto record = parseNodeRecord(object);
  if (!record) {
    TORUS_LOG(Warn, Extender, "ignoring node", {"error", record.error().message});
    return;
  }
  if (!record->topologyProblem.empty()) {
    TORUS_LOG(Warn, Extender, "node topology annotation unusable; using the catalog",
              {"node", record->name}, {"error", record->topologyProblem});
  }
  if (record->instanceType.empty() || !topology::findInstanceType(record->instanceType)) {
    if (state_.hasNode(record->name)) state_.removeNode(record->name);
    if (domains_ != nullptr) domains_->remove(record->name);
    return;  // not a Neuron node
  }
  if (domains_ != nullptr) domains_->set(record->name, nodeDomainsFromLabels(object));
  const bool known = state_.hasNode(record->name);
  // The node as its agent discovered it (links that are down included), or the catalog's.
  std::optional<topology::Node> discovered;
  if (record->topology && record->topology->instanceType == record->instanceType) {
    auto node = contracts::nodeFromTopology(*record->topology);
    if (node) {
      discovered = std::move(*node);
    } else {
      TORUS_LOG(Warn, Extender, "node topology annotation unusable; using the catalog",
                {"node", record->name}, {"error", node.error().message});
    }
  }
  auto dropped = discovered ? state_.upsertNode(record->name, std::move(*discovered))
                            : state_.upsertNode(record->name, record->instanceType, record->lnc,
                                                record->unhealthy);
  if (!dropped) {
    TORUS_LOG(Warn, Extender, "ignoring node", {"node", record->name},
              {"error", dropped.error().message});
    return;
  }
  if (!record->kubeletViewProblem.empty()) {
    TORUS_LOG(Warn, Extender, "node agent's report of kubelet unreadable; placing nothing there",
              {"node", record->name}, {"error", record->kubeletViewProblem});
  }
  state_.setKubeletRefusal(record->name, record->kubeletRefuses);
  if (*dropped > 0) {
    TORUS_LOG(Warn, Extender, "node LNC changed; its allocations are re-read from pods",
              {"node", record->name}, {"dropped", *dropped});
  }
  if (!known) {
    TORUS_LOG(Info, Extender, "node added", {"node", record->name},
              {"instance_type", record->instanceType}, {"lnc", record->lnc},
              {"unhealthy_devices", record->unhealthy.toRangeString()});
  }
  adoptWaitingPods(record->name);
}

void ClusterMirror::applyNodeList(const std::vector<std::shared_ptr<const json>>& items) {
  std::set<std::string> listed;
  for (const auto& item : items) {
    listed.insert(objectName(*item));
    upsertNode(*item);
  }
  if (domains_ != nullptr) domains_->retain({listed.begin(), listed.end()});
  for (const std::string& name : state_.nodeNames()) {
    if (listed.count(name) == 0) {
      TORUS_LOG(Info, Extender, "node gone", {"node", name},
                {"allocations_dropped", state_.removeNode(name)});
    }
  }
}

void ClusterMirror::applyNodeEvent(const kube::WatchEvent& event) {
  if (event.type == "DELETED") {
    const std::string name = objectName(*event.object);
    if (domains_ != nullptr) domains_->remove(name);
    if (state_.hasNode(name)) {
      TORUS_LOG(Info, Extender, "node deleted", {"node", name},
                {"allocations_dropped", state_.removeNode(name)});
    }
    return;
  }
  upsertNode(*event.object);
}

std::optional<std::string> ClusterMirror::applyPod(const json& object) {
  auto record = parsePodRecord(object);
  if (!record) {
    TORUS_LOG(Warn, Extender, "ignoring pod", {"error", record.error().message});
    return std::nullopt;
  }
  const PodDemand& pod = record->demand;
  if (gangs_ != nullptr)
    gangs_->apply(pod, record->nodeName, record->finished() || record->deleting);
  if (!record->holdsNeuron()) {
    if (!record->finished() && pod.wantsNeuron()) return std::nullopt;  // not bound yet
    {
      // A pod parked because another pod held its ids must not be tracked once they are freed:
      // it has ended, and nothing would release it again until it is deleted.
      std::lock_guard lock(waitingMutex_);
      waitingForNode_.erase(pod.uid);
      conflicting_.erase(pod.uid);
    }
    if (state_.allocationOf(pod.uid)) {
      state_.release(pod.uid);
      TORUS_LOG(Info, Extender, "released", {"pod", pod.key()}, {"phase", record->phase});
      retryConflicting();
    }
    return std::nullopt;
  }
  if (!record->assignedIds) {
    // Bound by another scheduler: the node's plugin picks the ids and we cannot see them.
    TORUS_LOG(Debug, Extender, "bound pod without Neuron ids; not tracked", {"pod", pod.key()},
              {"node", record->nodeName}, {"problem", record->idsProblem});
    return std::nullopt;
  }
  {
    // Checked and parked under one lock: adoptWaitingPods takes it after adding the node, so a
    // node that arrives between the check and the parking still finds the pod.
    std::lock_guard lock(waitingMutex_);
    if (!state_.hasNode(record->nodeName)) {
      waitingForNode_[pod.uid] = *record;
      return pod.uid;
    }
    auto observed = state_.observe(record->nodeName, pod, *record->assignedIds);
    if (!observed && observed.error().code != ErrorCode::kAborted) {
      TORUS_LOG(Error, Extender, "pod's Neuron ids do not fit its node", {"pod", pod.key()},
                {"node", record->nodeName}, {"ids", record->assignedIds->toRangeString()},
                {"error", observed.error().message});
      conflicting_.erase(pod.uid);
      return std::nullopt;
    }
    if (observed) {
      conflicting_.erase(pod.uid);
    } else {
      TORUS_LOG(Warn, Extender,
                "pod's Neuron ids are held by another pod here; it keeps what it held, and is "
                "tracked as it is once they are free",
                {"pod", pod.key()}, {"node", record->nodeName},
                {"ids", record->assignedIds->toRangeString()}, {"error", observed.error().message});
      conflicting_[pod.uid] = *record;
    }
  }
  // Its move may have freed what a parked pod holds, or it waits on a parked pod itself.
  retryConflicting();
  return pod.uid;
}

void ClusterMirror::retryConflicting() {
  std::lock_guard lock(waitingMutex_);
  for (auto it = conflicting_.begin(); it != conflicting_.end();) {
    const PodRecord& record = it->second;
    if (!state_.observe(record.nodeName, record.demand, *record.assignedIds)) {
      ++it;
      continue;
    }
    TORUS_LOG(Info, Extender, "pod's Neuron ids are free now; tracked",
              {"pod", record.demand.key()}, {"ids", record.assignedIds->toRangeString()});
    it = conflicting_.erase(it);
  }
  // What is left may wait on each other: kubelet gave two pods each other's ids (it picks which
  // pod a preference was for). Each such pair is tried together, so neither waits for the other
  // to end. Only pairs where each holds what the other wants are tried: pods parked for another
  // reason (ids written twice by another tool) never make this quadratic.
  const auto wantsWhatIsHeldBy = [&](const PodRecord& wanting, const PodRecord& holding) {
    const auto held = state_.allocationOf(holding.demand.uid);
    return held && held->node == wanting.nodeName && held->unit == wanting.demand.unit &&
           held->ids.intersects(*wanting.assignedIds);
  };
  for (auto first = conflicting_.begin(); first != conflicting_.end();) {
    bool swapped = false;
    for (auto second = std::next(first); second != conflicting_.end(); ++second) {
      const PodRecord& a = first->second;
      const PodRecord& b = second->second;
      if (!wantsWhatIsHeldBy(a, b) || !wantsWhatIsHeldBy(b, a)) continue;
      if (!state_.observeTogether(
              {{a.nodeName, a.demand, *a.assignedIds}, {b.nodeName, b.demand, *b.assignedIds}})) {
        continue;
      }
      TORUS_LOG(Info, Extender, "pods hold each other's promised Neuron ids; tracked as they are",
                {"pod", a.demand.key()}, {"ids", a.assignedIds->toRangeString()},
                {"other_pod", b.demand.key()}, {"other_ids", b.assignedIds->toRangeString()});
      conflicting_.erase(second);
      first = conflicting_.erase(first);
      swapped = true;
      break;
    }
    if (!swapped) ++first;
  }
}

void ClusterMirror::forgetPod(const json& object) {
  const std::string uid = uidOf(object);
  if (gangs_ != nullptr) gangs_->forget(uid);
  {
    std::lock_guard lock(waitingMutex_);
    waitingForNode_.erase(uid);
    conflicting_.erase(uid);
  }
  if (const auto held = state_.allocationOf(uid); held && state_.release(uid)) {
    TORUS_LOG(Info, Extender, "released", {"pod", held->podKey}, {"node", held->node},
              {"ids", held->ids.toRangeString()});
    retryConflicting();
  }
}

void ClusterMirror::applyPodList(const std::vector<std::shared_ptr<const json>>& items) {
  std::vector<std::string> holding;
  for (const auto& item : items) {
    if (auto uid = applyPod(*item)) holding.push_back(std::move(*uid));
  }
  if (gangs_ != nullptr) {
    std::vector<std::string> listed;
    for (const auto& item : items)
      listed.push_back(uidOf(*item));
    gangs_->retain(listed);
  }
  {
    std::lock_guard lock(waitingMutex_);
    const std::set<std::string> listed(holding.begin(), holding.end());
    std::erase_if(waitingForNode_,
                  [&](const auto& entry) { return listed.count(entry.first) == 0; });
    std::erase_if(conflicting_, [&](const auto& entry) { return listed.count(entry.first) == 0; });
  }
  if (const int dropped = state_.retainObserved(holding); dropped > 0) {
    TORUS_LOG(Info, Extender, "released allocations of pods that are gone", {"count", dropped});
    retryConflicting();
  }
}

void ClusterMirror::applyPodEvent(const kube::WatchEvent& event) {
  if (event.type == "DELETED") {
    forgetPod(*event.object);
  } else {
    applyPod(*event.object);
  }
}

void ClusterMirror::adoptWaitingPods(const std::string& node) {
  // Under the lock throughout, so a pod deleted meanwhile is either still parked (and erased by
  // forgetPod) or already held (and released by it), never held after its deletion.
  std::lock_guard lock(waitingMutex_);
  for (auto it = waitingForNode_.begin(); it != waitingForNode_.end();) {
    if (it->second.nodeName != node) {
      ++it;
      continue;
    }
    const PodRecord& record = it->second;
    if (auto observed = state_.observe(node, record.demand, *record.assignedIds); !observed) {
      TORUS_LOG(Error, Extender, "pod's Neuron ids conflict with the cluster state",
                {"pod", record.demand.key()}, {"node", node}, {"error", observed.error().message});
    }
    it = waitingForNode_.erase(it);
  }
}

}  // namespace torus::extender
