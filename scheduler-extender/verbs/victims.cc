#include "scheduler-extender/verbs/victims.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <unordered_set>

#include "common/topology/allowed_shapes.h"
#include "common/topology/neuronlink_graph.h"
#include "common/topology/placement.h"

namespace torus::extender {
namespace {

// Whether the pod has a valid set once `victims` are gone. Only healthy cores count as freed: a
// victim on a device that has since failed gives back nothing usable. What kubelet refuses now is
// left out: much of it is the victims' own holding through the other resource, which the agent
// gives back once they are gone (the pod is placed only then).
bool opensValidSet(const NodeState& node, const std::vector<const Allocation*>& victims,
                   const PodDemand& pod) {
  NodeState after = node;
  after.kubeletRefuses = {};
  const topology::CoreSet healthy = node.model.coresOfDevices(node.model.healthyDevices());
  for (const Allocation* victim : victims)
    after.freeCores |= victim->cores & healthy;
  return topology::choosePlacement(after.model, {pod.unit, pod.count, freeIds(after, pod.unit), {}})
      .ok();
}

// Proposed victims that hold no Neuron resource here, which kube-scheduler picked for CPU or
// memory, followed by the Neuron holders chosen.
std::vector<std::string> withOtherVictims(const std::vector<std::string>& proposed,
                                          const std::vector<Allocation>& held,
                                          const std::vector<const Allocation*>& chosen) {
  std::unordered_set<std::string> holders;
  for (const Allocation& allocation : held)
    holders.insert(allocation.podUid);
  std::vector<std::string> victims;
  for (const std::string& uid : proposed) {
    if (holders.count(uid) == 0) victims.push_back(uid);
  }
  for (const Allocation* allocation : chosen)
    victims.push_back(allocation->podUid);
  return victims;
}

// What evicting `victims` costs, cheaper first: the highest priority among them, how many, and
// the sum of their priorities.
std::tuple<int, std::size_t, long long> evictionCost(
    const std::vector<const Allocation*>& victims) {
  int highest = std::numeric_limits<int>::min();
  long long sum = 0;
  for (const Allocation* victim : victims) {
    highest = std::max(highest, victim->priority);
    sum += victim->priority;
  }
  return {highest, victims.size(), sum};
}

// When the pod takes whole devices' worth (every device request, and core requests of whole
// devices): the devices of each allowed, connected, healthy shape of that size, so victims are
// chosen to free one such shape, rather than whatever the greedy order happens to free (a
// valid but loose run across two rows, say). Empty when the pod's size is not whole devices.
std::vector<topology::DeviceSet> wholeDeviceShapes(const topology::Node& model,
                                                   const PodDemand& pod) {
  const int perDevice = model.logicalCoresPerDevice();
  int devices = pod.count;
  if (pod.unit == topology::AllocationUnit::kCore) {
    if (perDevice <= 0 || pod.count % perDevice != 0) return {};
    devices = pod.count / perDevice;
  }
  const auto graph = topology::NeuronLinkGraph::fromNode(model);
  const topology::DeviceSet healthy = model.healthyDevices();
  std::vector<topology::DeviceSet> shapes;
  for (const topology::DeviceSet& set :
       topology::allowedDeviceSets(topology::shapeRulesOf(model), devices)) {
    if (set.isSubsetOf(healthy) && graph.isConnected(set)) shapes.push_back(set);
  }
  return shapes;
}

// The cheapest shape to clear: every pod on it must be evictable. Cost: the highest victim
// priority, then how many victims, then their priority sum, then fewer of them not proposed by
// kube-scheduler; ties go to the first shape (lowest ids).
std::optional<std::vector<const Allocation*>> clearCheapestShape(
    const NodeState& node, const std::vector<topology::DeviceSet>& shapes,
    const std::vector<Allocation>& held, const std::vector<const Allocation*>& evictable,
    const std::unordered_set<std::string>& proposedUids) {
  std::optional<std::pair<std::tuple<int, std::size_t, long long, std::ptrdiff_t>,
                          std::vector<const Allocation*>>>
      best;
  for (const topology::DeviceSet& shape : shapes) {
    const topology::CoreSet cores = node.model.coresOfDevices(shape);
    std::vector<const Allocation*> victims;
    bool clearable = true;
    for (const Allocation& allocation : held) {
      if (!allocation.cores.intersects(cores)) continue;
      if (std::ranges::find(evictable, &allocation) == evictable.end()) {
        clearable = false;
        break;
      }
      victims.push_back(&allocation);
    }
    if (!clearable) continue;
    const auto unproposed = std::ranges::count_if(
        victims, [&](const Allocation* victim) { return proposedUids.count(victim->podUid) == 0; });
    const auto cost = std::tuple_cat(evictionCost(victims), std::make_tuple(unproposed));
    if (!best || cost < best->first) best.emplace(cost, std::move(victims));
  }
  if (!best) return std::nullopt;
  return std::move(best->second);
}

}  // namespace

std::optional<std::vector<std::string>> chooseVictims(const NodeState& node,
                                                      const std::vector<Allocation>& held,
                                                      const PodDemand& pod,
                                                      const std::vector<std::string>& proposed) {
  const std::unordered_set<std::string> proposedUids(proposed.begin(), proposed.end());
  std::vector<const Allocation*> proposedHolders;
  std::vector<const Allocation*> evictable;
  for (const Allocation& allocation : held) {
    if (allocation.priority >= pod.priority) continue;  // never, whoever proposes it
    const bool isProposed = proposedUids.count(allocation.podUid) != 0;
    if (isProposed) proposedHolders.push_back(&allocation);
    // A pod we bound but have not yet seen running may be unknown to kube-scheduler as a pod of
    // this node, so only kube-scheduler itself may name it.
    if (isProposed || !allocation.assumed) evictable.push_back(&allocation);
  }
  if (opensValidSet(node, proposedHolders, pod)) {
    return withOtherVictims(proposed, held, proposedHolders);
  }

  if (const auto shapes = wholeDeviceShapes(node.model, pod); !shapes.empty()) {
    auto victims = clearCheapestShape(node, shapes, held, evictable, proposedUids);
    if (victims && opensValidSet(node, *victims, pod)) {
      return withOtherVictims(proposed, held, *victims);
    }
    if (!victims) return std::nullopt;
  }

  // Least important first: lowest priority, then kube-scheduler's own picks (it weighed PDBs and
  // start times, which the extender does not see), then by UID so the answer is reproducible.
  const auto importance = [&](const Allocation* allocation) {
    return std::make_tuple(allocation->priority, proposedUids.count(allocation->podUid) == 0,
                           allocation->podUid);
  };
  std::ranges::sort(evictable, [&](const Allocation* a, const Allocation* b) {
    return importance(a) < importance(b);
  });
  std::vector<const Allocation*> victims;
  bool opens = false;
  for (const Allocation* candidate : evictable) {
    victims.push_back(candidate);
    if ((opens = opensValidSet(node, victims, pod))) break;
  }
  if (!opens) return std::nullopt;
  // Give back the most important first, so what stays evicted is the cheapest minimal set.
  for (std::size_t i = victims.size(); i-- > 0;) {
    std::vector<const Allocation*> without = victims;
    without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
    if (opensValidSet(node, without, pod)) victims = std::move(without);
  }
  return withOtherVictims(proposed, held, victims);
}

std::optional<PreemptionPlan> planCrossResourcePreemption(
    const ClusterState& state, const PodDemand& pod,
    const std::function<bool(const std::string& node)>& considered) {
  std::optional<PreemptionPlan> best;
  std::tuple<int, std::size_t, long long> bestCost{};
  std::vector<std::string> names = state.nodeNames();
  std::ranges::sort(names);
  auto heldByNode = state.allocationsByNode();  // a node holding nothing reads as empty
  for (const std::string& name : names) {
    if (!considered(name)) continue;
    const auto view = state.node(name);
    if (!view) continue;
    const std::vector<Allocation>& held = heldByNode[name];
    const auto uids = chooseVictims(*view, held, pod, {});
    if (!uids) continue;
    if (uids->empty()) return std::nullopt;  // it fits here now
    PreemptionPlan plan{name, {}};
    std::vector<const Allocation*> victims;
    for (const std::string& uid : *uids)
      victims.push_back(&*std::ranges::find(held, uid, &Allocation::podUid));
    const bool crossesResources = std::ranges::any_of(
        victims, [&](const Allocation* victim) { return victim->unit != pod.unit; });
    if (!crossesResources) continue;
    for (const Allocation* victim : victims)
      plan.victims.push_back(*victim);
    const auto cost = evictionCost(victims);
    if (!best || cost < bestCost) {
      best = std::move(plan);
      bestCost = cost;
    }
  }
  return best;
}

}  // namespace torus::extender
