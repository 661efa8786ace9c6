// Preemption by shape. kube-scheduler chooses victims by counting resources: the least important
// pods until the count fits. Cores freed that way can be scattered over the node, so no valid set
// (choosePlacement's rule) opens and the preemptor stays Pending for ever. This chooses, on one
// node, the pods whose eviction does open a valid set, the way kube-scheduler chooses its own.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "scheduler-extender/state/cluster_state.h"

namespace torus::extender {

// The victims to evict from `node` for `pod`, given what runs there (`held`) and kube-scheduler's
// proposal. Its proposal is kept when it frees a valid set. Otherwise, when the pod takes whole
// devices' worth, the cheapest allowed connected shape of that size to clear (every pod on it
// of lower priority; lowest highest priority, then fewest victims). For other sizes, pods of
// lower priority are added least important first (lowest priority, kube-scheduler's own picks
// first) until a valid set is free, then every one not needed is given back, most important
// first — the result is minimal: sparing any one victim closes the set again. Proposed victims that
// hold no Neuron resource here stay (kube-scheduler picked them for CPU or memory). nullopt when
// evicting every lower-priority pod would still leave no valid set.
std::optional<std::vector<std::string>> chooseVictims(const NodeState& node,
                                                      const std::vector<Allocation>& held,
                                                      const PodDemand& pod,
                                                      const std::vector<std::string>& proposed);

// Preemption across the two resources. Cores of a device held through one resource are reported
// Unhealthy on the other, so kube-scheduler's count says a pod of one resource can never gain
// from evicting pods of the other and it never asks /preempt. For such a pod (Unschedulable, no
// nominated node), this finds the node where evicting lower-priority pods opens a valid set, at
// least one of them holding the other resource (otherwise kube-scheduler could have seen it and
// chose not to). Among nodes: the lowest highest victim priority, then the fewest victims, then
// the lowest priority sum, then the node name. Only nodes for which `considered` says true are
// looked at. No plan when one of them has a valid set free already: the pod is then waiting for
// kube-scheduler's counts to catch up (after an earlier plan's victims went), not for victims.
struct PreemptionPlan {
  std::string node;
  std::vector<Allocation> victims;
};
std::optional<PreemptionPlan> planCrossResourcePreemption(
    const ClusterState& state, const PodDemand& pod,
    const std::function<bool(const std::string& node)>& considered);

}  // namespace torus::extender
