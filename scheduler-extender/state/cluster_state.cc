#include "scheduler-extender/state/cluster_state.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "common/contracts/neuron_names.h"
#include "common/topology/allowed_shapes.h"
#include "scheduler-extender/state/node_score.h"

namespace torus::extender {

KubeletRefusal kubeletRefusalOf(const contracts::KubeletUnavailable& unhealthy) {
  KubeletRefusal refusal;
  for (const auto& [resource, ids] : unhealthy) {
    if (resource == contracts::kNeuronCoreResource) {
      refusal.cores |= ids;
    } else {
      refusal.devices |= ids;  // neuron and its legacy alias neurondevice both count devices
    }
  }
  return refusal;
}

namespace {

std::string linksText(const topology::Node& node) {
  std::string text;
  for (const topology::Device& device : node.devices) {
    for (const int peer : device.connected) {
      text += std::to_string(peer);
      text += ',';
    }
    text += ';';
  }
  return text;
}

}  // namespace

Result<int> ClusterState::upsertNode(const std::string& name, const std::string& instanceType,
                                     int lnc, const topology::DeviceSet& unhealthy) {
  auto model = topology::catalogNode(instanceType, lnc);
  if (!model) return std::move(model).error().withContext("node " + name);
  unhealthy.forEach([&](int device) {
    if (device < model->deviceCount()) {
      model->devices[static_cast<std::size_t>(device)].health = topology::reportedUnhealthy();
    }
  });
  return upsertNode(name, std::move(*model));
}

Result<int> ClusterState::upsertNode(const std::string& name, topology::Node model) {
  std::lock_guard lock(mutex_);
  auto it = nodes_.find(name);
  int dropped = 0;
  // A type the catalog lacks has no row to hold its shape to: its agent's count of devices and
  // cores is compared too.
  if (it != nodes_.end() && it->second.model.catalog == model.catalog &&
      it->second.model.lnc == model.lnc && it->second.model.deviceCount() == model.deviceCount() &&
      it->second.model.physicalCoresPerDevice == model.physicalCoresPerDevice) {
    // Only health and links can differ: the allocations stay, the shapes are the type's.
    NodeEntry& entry = it->second;
    entry.model = std::move(model);
    entry.healthyCores = entry.model.coresOfDevices(entry.model.healthyDevices());
    entry.links = internLinksLocked(linksText(entry.model));
    return dropped;
  }
  if (it != nodes_.end()) dropped = dropAllocationsLocked(name);
  NodeEntry& entry = nodes_[name];
  entry.shapes = std::make_shared<const topology::ShapeCatalog>(topology::shapeRulesOf(model));
  entry.model = std::move(model);
  entry.healthyCores = entry.model.coresOfDevices(entry.model.healthyDevices());
  entry.links = internLinksLocked(linksText(entry.model));
  entry.usedCores = {};
  return dropped;
}

const std::string* ClusterState::internLinksLocked(std::string text) {
  return &*linksTexts_.insert(std::move(text)).first;
}

bool ClusterState::setKubeletRefusal(const std::string& name, const KubeletRefusal& refusal) {
  std::lock_guard lock(mutex_);
  const auto it = nodes_.find(name);
  if (it == nodes_.end()) return false;
  it->second.kubeletRefuses = refusal;
  return true;
}

int ClusterState::removeNode(const std::string& name) {
  std::lock_guard lock(mutex_);
  const int dropped = dropAllocationsLocked(name);
  nodes_.erase(name);
  return dropped;
}

int ClusterState::dropAllocationsLocked(const std::string& node) {
  const auto before = allocations_.size();
  std::erase_if(allocations_, [&](const auto& entry) { return entry.second.node == node; });
  if (const auto it = nodes_.find(node); it != nodes_.end()) it->second.usedCores = {};
  return static_cast<int>(before - allocations_.size());
}

bool ClusterState::hasNode(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return nodes_.count(name) != 0;
}

std::optional<NodeState> ClusterState::node(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  const topology::Node& model = it->second.model;
  return NodeState{name, model, it->second.healthyCores - it->second.usedCores,
                   it->second.kubeletRefuses};
}

std::vector<std::string> ClusterState::nodeNames() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, entry] : nodes_)
    names.push_back(name);
  return names;
}

Result<Allocation> ClusterState::record(const std::string& nodeName, const PodDemand& pod,
                                        const topology::CoreSet& ids) {
  std::lock_guard lock(mutex_);
  if (allocations_.count(pod.uid) != 0) {
    return makeError(ErrorCode::kAlreadyExists, "pod " + pod.key() + " already holds cores");
  }
  return recordLocked(nodeName, pod, ids);
}

Result<Allocation> ClusterState::recordLocked(const std::string& nodeName, const PodDemand& pod,
                                              const topology::CoreSet& ids) {
  const auto it = nodes_.find(nodeName);
  if (it == nodes_.end()) {
    return makeError(ErrorCode::kNotFound, "node " + nodeName + " is not a known Neuron node");
  }
  NodeEntry& entry = it->second;
  const topology::CoreSet valid = pod.unit == topology::AllocationUnit::kCore
                                      ? entry.model.allCores()
                                      : entry.model.allDevices();
  if (ids.empty() || !ids.isSubsetOf(valid)) {
    return makeError(ErrorCode::kInvalidArgument,
                     "ids " + ids.toRangeString() + " do not exist on " + nodeName);
  }
  const topology::CoreSet cores =
      pod.unit == topology::AllocationUnit::kCore ? ids : entry.model.coresOfDevices(ids);
  if (cores.intersects(entry.usedCores)) {
    return makeError(ErrorCode::kAborted, "cores " + (cores & entry.usedCores).toRangeString() +
                                              " on " + nodeName + " are already held");
  }
  Allocation allocation{nodeName, pod.key(), pod.uid, pod.unit, ids, cores};
  allocation.priority = pod.priority;
  entry.usedCores |= cores;
  allocations_[pod.uid] = allocation;
  return allocation;
}

Result<Allocation> ClusterState::observe(const std::string& nodeName, const PodDemand& pod,
                                         const topology::CoreSet& ids) {
  std::lock_guard lock(mutex_);
  if (const auto held = allocations_.find(pod.uid); held != allocations_.end()) {
    if (held->second.node == nodeName && held->second.ids == ids && held->second.unit == pod.unit) {
      held->second.assumed = false;
      held->second.priority = pod.priority;
      return held->second;
    }
  }
  // The pod's annotation is the truth and replaces our guess — once its ids are free here.
  // Until then the pod keeps counting what it was known to hold: kubelet gave two pods each
  // other's ids, and their corrections arrive one at a time; releasing the first pod's old ids
  // at its correction would show them free while the second pod still runs on them.
  std::vector<Observation> one{{nodeName, pod, ids}};
  auto replaced = replaceLocked(one);
  if (!replaced) return std::move(replaced).error();
  return allocations_.at(pod.uid);
}

Result<void> ClusterState::observeTogether(const std::vector<Observation>& observations) {
  std::lock_guard lock(mutex_);
  return replaceLocked(observations);
}

Result<void> ClusterState::replaceLocked(const std::vector<Observation>& observations) {
  std::vector<Allocation> previous;
  for (const Observation& seen : observations) {
    if (const auto held = allocations_.find(seen.pod.uid); held != allocations_.end()) {
      previous.push_back(held->second);
      releaseLocked(held);
    }
  }
  std::vector<std::string> recorded;
  for (const Observation& seen : observations) {
    auto allocation = recordLocked(seen.node, seen.pod, seen.ids);
    if (allocation) {
      recorded.push_back(seen.pod.uid);
      continue;
    }
    // All or nothing: the new ones go, the previous ones come back (their cores were freed
    // above under this lock, so nothing else took them).
    for (const std::string& uid : recorded)
      releaseLocked(allocations_.find(uid));
    for (const Allocation& old : previous) {
      if (const auto node = nodes_.find(old.node); node != nodes_.end()) {
        node->second.usedCores |= old.cores;
      }
      allocations_[old.podUid] = old;
    }
    return std::move(allocation).error();
  }
  return okResult();
}

std::vector<Allocation> ClusterState::expireAssumptions(std::chrono::steady_clock::time_point now,
                                                        std::chrono::steady_clock::duration ttl) {
  std::lock_guard lock(mutex_);
  std::vector<Allocation> expired;
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    const auto next = std::next(it);
    if (it->second.assumed && now - it->second.decidedAt > ttl) {
      expired.push_back(it->second);
      releaseLocked(it);
    }
    it = next;
  }
  return expired;
}

int ClusterState::retainObserved(const std::vector<std::string>& podUids) {
  const std::unordered_set<std::string> listed(podUids.begin(), podUids.end());
  std::lock_guard lock(mutex_);
  int dropped = 0;
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    const auto next = std::next(it);
    if (!it->second.assumed && listed.count(it->first) == 0) {
      releaseLocked(it);
      ++dropped;
    }
    it = next;
  }
  return dropped;
}

void ClusterState::releaseLocked(std::map<std::string, Allocation>::iterator it) {
  const auto node = nodes_.find(it->second.node);
  if (node != nodes_.end()) node->second.usedCores -= it->second.cores;
  allocations_.erase(it);
}

bool ClusterState::release(const std::string& podUid) {
  std::lock_guard lock(mutex_);
  const auto it = allocations_.find(podUid);
  if (it == allocations_.end()) return false;
  releaseLocked(it);
  return true;
}

std::optional<Allocation> ClusterState::allocationOf(const std::string& podUid) const {
  std::lock_guard lock(mutex_);
  const auto it = allocations_.find(podUid);
  if (it == allocations_.end()) return std::nullopt;
  return it->second;
}

std::vector<Allocation> ClusterState::allocationsOn(const std::string& node) const {
  std::lock_guard lock(mutex_);
  std::vector<Allocation> result;
  for (const auto& [uid, allocation] : allocations_) {
    if (allocation.node == node) result.push_back(allocation);
  }
  return result;
}

std::unordered_map<std::string, std::vector<Allocation>> ClusterState::allocationsByNode() const {
  std::lock_guard lock(mutex_);
  std::unordered_map<std::string, std::vector<Allocation>> result;
  for (const auto& [uid, allocation] : allocations_)
    result[allocation.node].push_back(allocation);
  return result;
}

std::vector<Allocation> ClusterState::allocations() const {
  std::lock_guard lock(mutex_);
  std::vector<Allocation> result;
  result.reserve(allocations_.size());
  for (const auto& [uid, allocation] : allocations_)
    result.push_back(allocation);
  return result;
}

}  // namespace torus::extender
