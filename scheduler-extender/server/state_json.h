// GET /state: what the extender believes, for operators and tests — every Neuron node with its
// free ids, and every allocation (pod, node, ids, whether it is still an unconfirmed assumption).
// Sorted, so two extenders that read the same cluster print the same text.
#pragma once

#include <string>

#include "scheduler-extender/state/cluster_state.h"

namespace torus::extender {

std::string clusterStateJson(const ClusterState& state);

}  // namespace torus::extender
