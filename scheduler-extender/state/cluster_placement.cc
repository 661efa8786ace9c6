// ClusterState's placement: where a pod or a gang fits (trials, scored or not) and the reserve
// that checks and records under one lock. The books it reads and writes (nodes, allocations,
// observations) are in cluster_state.cc.
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "common/contracts/neuron_names.h"
#include "common/topology/allowed_shapes.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/state/node_score.h"

namespace torus::extender {

namespace {

// freeIds without a NodeState, so a placement trial need not copy the node's model.
topology::CoreSet freeIdsOf(const topology::Node& model, const topology::CoreSet& freeCores,
                            const KubeletRefusal& refused, topology::AllocationUnit unit) {
  if (refused.everything) return {};
  if (unit == topology::AllocationUnit::kCore) return freeCores - refused.cores;
  topology::DeviceSet devices;
  for (int device = 0; device < model.deviceCount(); ++device) {
    if (model.coresOfDevice(device).isSubsetOf(freeCores)) devices.insert(device);
  }
  return devices - refused.devices;
}

// What decides a trial's answer on a node: nodes alike in all of it place a pod alike, so a
// trial over many nodes computes each distinct one once.
struct TrialKey {
  const topology::InstanceType* type;
  int lnc;
  topology::CoreSet healthy;
  topology::CoreSet used;
  const std::string* links;  // interned: alike links are one pointer
  const KubeletRefusal* refused;
  bool operator==(const TrialKey& other) const {
    return type == other.type && lnc == other.lnc && links == other.links &&
           healthy == other.healthy && used == other.used && *refused == *other.refused;
  }
};

struct TrialKeyHash {
  std::size_t operator()(const TrialKey& key) const {
    std::size_t hash = std::hash<const void*>()(key.type) ^ static_cast<std::size_t>(key.lnc);
    key.used.forEach(
        [&](int id) { hash = hash * 1099511628211ULL ^ static_cast<std::size_t>(id); });
    return hash ^ static_cast<std::size_t>(key.healthy.size()) << 1 ^
           std::hash<const void*>()(key.links);
  }
};

}  // namespace

topology::CoreSet freeIds(const NodeState& node, topology::AllocationUnit unit) {
  return freeIdsOf(node.model, node.freeCores, node.kubeletRefuses, unit);
}

Result<Allocation> ClusterState::reserve(const std::string& nodeName, const PodDemand& pod,
                                         const topology::CoreSet& avoid) {
  std::lock_guard lock(mutex_);
  return reserveLocked(nodeName, pod, avoid);
}

Result<Allocation> ClusterState::reserveLocked(const std::string& nodeName, const PodDemand& pod,
                                               const topology::CoreSet& avoid) {
  if (const auto held = allocations_.find(pod.uid); held != allocations_.end()) {
    if (held->second.node == nodeName) return held->second;  // a retried bind
    return makeError(ErrorCode::kAlreadyExists,
                     "pod " + pod.key() + " already holds cores on " + held->second.node);
  }
  const auto it = nodes_.find(nodeName);
  if (it == nodes_.end()) {
    return makeError(ErrorCode::kNotFound, "node " + nodeName + " is not a known Neuron node");
  }
  NodeEntry& entry = it->second;
  const auto choose = [&](const topology::CoreSet& freeCores) {
    const topology::CoreSet free =
        freeIdsOf(entry.model, freeCores, entry.kubeletRefuses, pod.unit);
    return topology::choosePlacement(entry.model, {pod.unit, pod.count, free, {}});
  };
  const topology::CoreSet freeCores = entry.healthyCores - entry.usedCores;
  auto chosen = choose(freeCores - avoid);
  if (!chosen && !avoid.empty()) chosen = choose(freeCores);
  if (!chosen) return std::move(chosen).error().withContext("node " + nodeName);
  Allocation allocation{
      nodeName,
      pod.key(),
      pod.uid,
      pod.unit,
      *chosen,
      pod.unit == topology::AllocationUnit::kCore ? *chosen : entry.model.coresOfDevices(*chosen)};
  allocation.priority = pod.priority;
  allocation.assumed = true;
  allocation.decidedAt = std::chrono::steady_clock::now();
  allocation.allocTimeNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  entry.usedCores |= allocation.cores;
  allocations_[pod.uid] = allocation;
  return allocation;
}

Result<Allocation> ClusterState::moveReservation(const PodDemand& pod, const std::string& node) {
  std::lock_guard lock(mutex_);
  const auto it = allocations_.find(pod.uid);
  if (it == allocations_.end()) {
    return makeError(ErrorCode::kNotFound, "pod " + pod.key() + " holds no reservation to move");
  }
  if (!it->second.assumed) {
    return makeError(ErrorCode::kFailedPrecondition,
                     "pod " + pod.key() + " is bound to " + it->second.node + "; it stays there");
  }
  if (it->second.node == node) return it->second;
  const Allocation before = it->second;
  releaseLocked(it);
  auto moved = reserveLocked(node, pod);
  if (!moved) {
    // Nothing else ran under the lock: the cores it held are still free.
    if (const auto entry = nodes_.find(before.node); entry != nodes_.end())
      entry->second.usedCores |= before.cores;
    allocations_[pod.uid] = before;
  }
  return moved;
}

Result<void> ClusterState::reserveGroup(const std::vector<PodDemand>& pods,
                                        const std::vector<std::string>& nodes) {
  if (pods.size() != nodes.size()) {
    return makeError(ErrorCode::kInvalidArgument, "a group's pods and nodes differ in number");
  }
  std::lock_guard lock(mutex_);
  std::vector<std::string> taken;  // UIDs this call reserved (not those that held already)
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const bool heldBefore = allocations_.count(pods[i].uid) != 0;
    auto allocation = reserveLocked(nodes[i], pods[i]);
    if (!allocation) {
      // All or none: what this call took goes back.
      for (const std::string& uid : taken) {
        if (auto it = allocations_.find(uid); it != allocations_.end()) releaseLocked(it);
      }
      return std::move(allocation).error().withContext("reserving pod " + pods[i].key());
    }
    if (!heldBefore) taken.push_back(pods[i].uid);
  }
  return okResult();
}

Result<ClusterState::GroupPlacement> ClusterState::placeGroup(const std::vector<std::string>& nodes,
                                                              const std::vector<PodDemand>& pods,
                                                              bool quickReject) const {
  std::lock_guard lock(mutex_);
  // Each node with its used cores as the pods placed so far leave them (the entries themselves
  // stay untouched: nothing is recorded).
  std::vector<std::pair<const std::string*, const NodeEntry*>> entries;
  std::vector<topology::CoreSet> used;
  entries.reserve(nodes.size());
  int freeCores = 0;
  int fewestCoresPerDevice = std::numeric_limits<int>::max();
  for (const std::string& name : nodes) {
    const auto it = nodes_.find(name);
    if (it == nodes_.end()) continue;
    entries.emplace_back(&name, &it->second);
    used.push_back(it->second.usedCores);
    freeCores += static_cast<int>((it->second.healthyCores - it->second.usedCores).size());
    fewestCoresPerDevice = std::min(fewestCoresPerDevice, it->second.model.logicalCoresPerDevice());
  }
  if (entries.empty()) {
    return makeError(ErrorCode::kResourceExhausted,
                     "room for 0 of the " + std::to_string(pods.size()) + " pods");
  }
  // Too few free cores for the group, whatever the shapes: most domains of a busy cluster end here.
  long needed = 0;
  for (const PodDemand& pod : pods)
    needed += pod.unit == topology::AllocationUnit::kCore
                  ? pod.count
                  : static_cast<long>(pod.count) * fewestCoresPerDevice;
  if (quickReject && needed > freeCores) {
    return makeError(
        ErrorCode::kResourceExhausted,
        std::to_string(freeCores) + " free cores where the pods need " + std::to_string(needed));
  }
  GroupPlacement placement;
  for (const PodDemand& pod : pods) {
    std::size_t best = entries.size();
    Trial bestTrial;
    bestTrial.score = -1;
    // Most candidates are alike (empty, or full): each distinct one is placed once per pod.
    std::unordered_map<TrialKey, Result<Trial>, TrialKeyHash> memo;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const NodeEntry& entry = *entries[i].second;
      const TrialKey key{entry.model.catalog, entry.model.lnc,      entry.healthyCores, used[i],
                         entry.links,         &entry.kubeletRefuses};
      auto found = memo.find(key);
      if (found == memo.end())
        found = memo.emplace(key, tryPlaceLocked(entry, pod, true, &used[i])).first;
      const Result<Trial>& placed = found->second;
      if (placed && placed->score > bestTrial.score) {
        best = i;
        bestTrial = *placed;
      }
    }
    if (best == entries.size()) {
      return makeError(ErrorCode::kResourceExhausted,
                       "room for " + std::to_string(placement.nodes.size()) + " of the " +
                           std::to_string(pods.size()) + " pods");
    }
    const topology::Node& model = entries[best].second->model;
    used[best] |= pod.unit == topology::AllocationUnit::kCore ? bestTrial.ids
                                                              : model.coresOfDevices(bestTrial.ids);
    placement.nodes.push_back(*entries[best].first);
  }
  for (std::size_t i = 0; i < entries.size(); ++i)
    placement.freeCoresLeft += static_cast<int>((entries[i].second->healthyCores - used[i]).size());
  return placement;
}

Result<ClusterState::Trial> ClusterState::tryPlace(const std::string& nodeName,
                                                   const PodDemand& pod, bool withScore) const {
  std::lock_guard lock(mutex_);
  const auto it = nodes_.find(nodeName);
  if (it == nodes_.end()) {
    return makeError(ErrorCode::kNotFound, "not a Neuron node known to the extender");
  }
  return tryPlaceLocked(it->second, pod, withScore);
}

ClusterState::Trials ClusterState::tryPlaceMany(const std::vector<std::string>& nodes,
                                                const PodDemand& pod, bool withScore,
                                                const HeldCores* held) const {
  Trials trials;
  trials.byNode_.reserve(nodes.size());
  std::unordered_map<TrialKey, const Result<Trial>*, TrialKeyHash> memo;
  const Result<Trial>* unknown = nullptr;
  std::lock_guard lock(mutex_);
  for (const std::string& name : nodes) {
    const auto it = nodes_.find(name);
    if (it == nodes_.end()) {
      if (unknown == nullptr) {
        unknown = &trials.distinct_.emplace_back(
            makeError(ErrorCode::kNotFound, "not a Neuron node known to the extender"));
      }
      trials.byNode_.push_back(unknown);
      continue;
    }
    const NodeEntry& entry = it->second;
    TrialKey key{entry.model.catalog, entry.model.lnc, entry.healthyCores,
                 entry.usedCores,     entry.links,     &entry.kubeletRefuses};
    if (held != nullptr) {
      if (const auto holds = held->find(name); holds != held->end()) key.used |= holds->second;
    }
    auto found = memo.find(key);
    if (found == memo.end()) {
      const Result<Trial>& trial =
          trials.distinct_.emplace_back(tryPlaceLocked(entry, pod, withScore, &key.used));
      found = memo.emplace(key, &trial).first;
    }
    trials.byNode_.push_back(found->second);
  }
  return trials;
}

Result<ClusterState::Trial> ClusterState::tryPlaceLocked(const NodeEntry& entry,
                                                         const PodDemand& pod, bool withScore,
                                                         const topology::CoreSet* usedNow) const {
  const topology::CoreSet freeCores =
      entry.healthyCores - (usedNow != nullptr ? *usedNow : entry.usedCores);
  auto chosen = topology::choosePlacement(
      entry.model,
      {pod.unit, pod.count, freeIdsOf(entry.model, freeCores, entry.kubeletRefuses, pod.unit), {}});
  if (!chosen) return std::move(chosen).error();
  Trial trial{*chosen, 0, {}};
  if (withScore) {
    trial.cores =
        pod.unit == topology::AllocationUnit::kCore ? *chosen : entry.model.coresOfDevices(*chosen);
    trial.score = nodeScore(entry.model, *entry.shapes, freeCores, freeCores - trial.cores);
  }
  return trial;
}

}  // namespace torus::extender
