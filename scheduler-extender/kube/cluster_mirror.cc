#include "scheduler-extender/kube/cluster_mirror.h"

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/contracts/topology_annotation.h"

namespace torus::extender {

using nlohmann::json;

void ClusterMirror::upsertNode(const NodeRecord& record) {
  // A Neuron node: a type the catalog knows, or one whose agent reports what it found there while
  // kubelet advertises its devices (a type the catalog lacks, which the chart placed an agent on
  // by a node label; the report outlives an agent that was removed).
  const bool catalogued = topology::findInstanceType(record.instanceType) != nullptr;
  const bool reportedByItsAgent = record.topology &&
                                  record.topology->instanceType == record.instanceType &&
                                  (catalogued || record.kubeletAdvertisesNeuron);
  std::optional<topology::Node> discovered;
  std::string problem = record.topologyProblem;
  if (reportedByItsAgent) {
    // The node as its agent discovered it (links that are down included).
    auto node = contracts::nodeFromTopology(*record.topology);
    if (node) {
      discovered = std::move(*node);
    } else {
      problem = node.error().message;
    }
  }
  if (record.instanceType.empty() || (!catalogued && !discovered)) {
    if (state_.hasNode(record.name)) state_.removeNode(record.name);
    if (domains_ != nullptr) domains_->remove(record.name);
    if (!record.instanceType.empty() && !problem.empty()) {
      TORUS_LOG(Warn, Extender,
                "ignoring node: its type is not in the catalog and its agent's report is unusable",
                {"node", record.name}, {"error", problem});
    }
    return;  // not a Neuron node
  }
  if (!problem.empty()) {
    TORUS_LOG(Warn, Extender, "node topology annotation unusable; using the catalog",
              {"node", record.name}, {"error", problem});
  }
  if (domains_ != nullptr) domains_->set(record.name, record.domains);
  const bool known = state_.hasNode(record.name);
  auto dropped = discovered ? state_.upsertNode(record.name, std::move(*discovered))
                            : state_.upsertNode(record.name, record.instanceType, record.lnc,
                                                record.unhealthy);
  if (!dropped) {
    TORUS_LOG(Warn, Extender, "ignoring node", {"node", record.name},
              {"error", dropped.error().message});
    return;
  }
  if (!record.kubeletViewProblem.empty()) {
    TORUS_LOG(Warn, Extender, "node agent's report of kubelet unreadable; placing nothing there",
              {"node", record.name}, {"error", record.kubeletViewProblem});
  }
  state_.setKubeletRefusal(record.name, record.kubeletRefuses);
  if (*dropped > 0) {
    TORUS_LOG(Warn, Extender, "node LNC changed; its allocations are re-read from pods",
              {"node", record.name}, {"dropped", *dropped});
  }
  if (!known) {
    TORUS_LOG(Info, Extender, "node added", {"node", record.name},
              {"instance_type", record.instanceType}, {"lnc", record.lnc},
              {"unhealthy_devices", record.unhealthy.toRangeString()});
  }
  adoptWaitingPods(record.name);
}

void ClusterMirror::applyNodes(const std::vector<NodeUpdate>& nodes) {
  std::set<std::string> listed;
  for (const NodeUpdate& node : nodes) {
    if (!node.name.empty()) listed.insert(node.name);
    applyNode(node);
  }
  if (domains_ != nullptr) domains_->retain({listed.begin(), listed.end()});
  for (const std::string& name : state_.nodeNames()) {
    if (listed.count(name) == 0) {
      TORUS_LOG(Info, Extender, "node gone", {"node", name},
                {"allocations_dropped", state_.removeNode(name)});
    }
  }
}

void ClusterMirror::applyNode(const NodeUpdate& node) {
  if (node.deleted) {
    if (domains_ != nullptr) domains_->remove(node.name);
    if (state_.hasNode(node.name)) {
      TORUS_LOG(Info, Extender, "node deleted", {"node", node.name},
                {"allocations_dropped", state_.removeNode(node.name)});
    }
    return;
  }
  if (!node.record) {
    TORUS_LOG(Warn, Extender, "ignoring node", {"error", node.problem});
    return;
  }
  upsertNode(*node.record);
}

void ClusterMirror::applyNodeList(const std::vector<std::shared_ptr<const json>>& items) {
  std::vector<NodeUpdate> nodes;
  nodes.reserve(items.size());
  for (const auto& item : items)
    nodes.push_back(parseNodeUpdate(*item, false));
  applyNodes(nodes);
}

std::optional<std::string> ClusterMirror::applyLivePod(const PodUpdate& update) {
  if (!update.record) {
    TORUS_LOG(Warn, Extender, "ignoring pod", {"error", update.problem});
    return std::nullopt;
  }
  const PodRecord& record = *update.record;
  const PodDemand& pod = record.demand;
  if (gangs_ != nullptr) gangs_->apply(pod, record.nodeName, record.finished() || record.deleting);
  if (!record.holdsNeuron()) {
    if (!record.finished() && pod.wantsNeuron()) return std::nullopt;  // not bound yet
    {
      // A pod parked because another pod held its ids must not be tracked once they are freed:
      // it has ended, and nothing would release it again until it is deleted.
      std::lock_guard lock(waitingMutex_);
      waitingForNode_.erase(pod.uid);
      conflicting_.erase(pod.uid);
    }
    if (state_.allocationOf(pod.uid)) {
      state_.release(pod.uid);
      TORUS_LOG(Info, Extender, "released", {"pod", pod.key()}, {"phase", record.phase});
      retryConflicting();
    }
    return std::nullopt;
  }
  if (!record.assignedIds) {
    // Bound by another scheduler: the node's plugin picks the ids and we cannot see them.
    TORUS_LOG(Debug, Extender, "bound pod without Neuron ids; not tracked", {"pod", pod.key()},
              {"node", record.nodeName}, {"problem", record.idsProblem});
    return std::nullopt;
  }
  {
    // Checked and parked under one lock: adoptWaitingPods takes it after adding the node, so a
    // node that arrives between the check and the parking still finds the pod.
    std::lock_guard lock(waitingMutex_);
    if (!state_.hasNode(record.nodeName)) {
      waitingForNode_[pod.uid] = record;
      return pod.uid;
    }
    auto observed = state_.observe(record.nodeName, pod, *record.assignedIds);
    if (!observed && observed.error().code != ErrorCode::kAborted) {
      TORUS_LOG(Error, Extender, "pod's Neuron ids do not fit its node", {"pod", pod.key()},
                {"node", record.nodeName}, {"ids", record.assignedIds->toRangeString()},
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
                {"pod", pod.key()}, {"node", record.nodeName},
                {"ids", record.assignedIds->toRangeString()}, {"error", observed.error().message});
      conflicting_[pod.uid] = record;
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

void ClusterMirror::forgetPod(const std::string& uid) {
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

void ClusterMirror::applyPods(const std::vector<PodUpdate>& pods) {
  std::vector<std::string> holding;
  for (const PodUpdate& pod : pods) {
    if (auto uid = applyLivePod(pod)) holding.push_back(std::move(*uid));
  }
  if (gangs_ != nullptr) {
    std::vector<std::string> listed;
    for (const PodUpdate& pod : pods)
      listed.push_back(pod.uid);
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

void ClusterMirror::applyPod(const PodUpdate& pod) {
  if (pod.deleted) {
    forgetPod(pod.uid);
  } else {
    applyLivePod(pod);
  }
}

void ClusterMirror::applyPodList(const std::vector<std::shared_ptr<const json>>& items) {
  std::vector<PodUpdate> pods;
  pods.reserve(items.size());
  for (const auto& item : items)
    pods.push_back(parsePodUpdate(*item, false));
  applyPods(pods);
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
