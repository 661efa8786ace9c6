// Preemption by shape. kube-scheduler chooses victims by counting resources: the least important
// pods until the count fits. Cores freed that way can be scattered over the node, so no valid set
// (choosePlacement's rule) opens and the preemptor stays Pending for ever. This chooses, on one
// node, the pods whose eviction does open a valid set, the way kube-scheduler chooses its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scheduler-extender/state/cluster_state.h"

namespace torus::extender {

// The victims to evict from `node` for `pod`, given what runs there (`held`) and kube-scheduler's
// proposal. Its proposal is kept when it frees a valid set. Otherwise pods of lower priority are
// added least important first (lowest priority, kube-scheduler's own picks first) until a valid
// set is free, then every one that is not needed is given back, most important first — the
// result is minimal: sparing any one victim closes the shape again. Proposed victims that hold no
// Neuron resource here stay (kube-scheduler picked them for CPU or memory). nullopt when evicting
// every lower-priority pod would still leave no valid set.
std::optional<std::vector<std::string>> chooseVictims(const NodeState& node,
                                                      const std::vector<Allocation>& held,
                                                      const PodDemand& pod,
                                                      const std::vector<std::string>& proposed);

}  // namespace torus::extender
