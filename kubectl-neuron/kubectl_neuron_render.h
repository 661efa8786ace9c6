// What kubectl-neuron prints: tables and drawings for people, JSON (--json) for scripts.
#pragma once

#include <string>

#include "common/base/result.h"
#include "kubectl-neuron/cluster_snapshot.h"

namespace torus::kubectl_neuron {

// Per Neuron node: type, LNC, cores and devices used, the largest free shape, health.
std::string renderNodes(const ClusterSnapshot& snapshot, bool json);
// One node's ring or torus, each device marked with the pod that holds it. NotFound names the
// node when it is not a Neuron node.
Result<std::string> renderNode(const ClusterSnapshot& snapshot, const std::string& name, bool json);
// Pods asking for Neuron resources (in `namespace_`, or all when empty): node, request, ids.
std::string renderPods(const ClusterSnapshot& snapshot, const std::string& namespace_, bool json);

}  // namespace torus::kubectl_neuron
