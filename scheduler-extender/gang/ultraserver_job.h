// Whether a gang runs as one UltraServer job: each of its Neuron pods holds a whole node, and
// together they hold the 4 nodes of one UltraServer, the 2 of a pair (server-id-2) or 1 node of
// one. The count goes on each pod's hand-off at bind (torus.dev/ultraserver-nodes), and the
// device plugin then gives its containers NEURON_RT_ULTRASERVER_MODE, _SERVER_ID and _NODE_ID,
// as AWS's UltraServer operator does for its workloads, so the runtime joins the nodes over
// NeuronLink without the user writing them.
#pragma once

#include <optional>
#include <vector>

#include "scheduler-extender/gang/gang_members.h"
#include "scheduler-extender/gang/node_domains.h"
#include "scheduler-extender/state/cluster_state.h"

namespace torus::extender {

// 4, 2 or 1 as above; none when a Neuron member holds nothing yet or only part of its node, two
// share a node, the nodes are not of one UltraServer (or of one pair, for two), or there are 3.
std::optional<int> ultraServerJobNodes(const ClusterState& state, const NodeDomainIndex& domains,
                                       const std::vector<GangMember>& members);

}  // namespace torus::extender
