// --simulate-cluster=trn2.48xlarge:256,inf2.48xlarge:64: an in-memory cluster of catalog nodes
// named sim-<type>-<index>, for demos, capacity planning and benchmarks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "scheduler-extender/state/cluster_state.h"

namespace torus::extender {

struct SimulatedNodes {
  std::string instanceType;
  int count = 0;
};

Result<std::vector<SimulatedNodes>> parseSimulatedCluster(std::string_view text);
std::string simulatedNodeName(const std::string& instanceType, int index);
Result<int> addSimulatedNodes(ClusterState& state, const std::vector<SimulatedNodes>& spec);

}  // namespace torus::extender
