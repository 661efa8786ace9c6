#include "scheduler-extender/state/simulated_cluster.h"

#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/topology/instance_catalog.h"

namespace torus::extender {

Result<std::vector<SimulatedNodes>> parseSimulatedCluster(std::string_view text) {
  std::vector<SimulatedNodes> spec;
  for (const std::string_view item : splitAndTrim(text, ',')) {
    if (item.empty()) continue;
    const std::size_t colon = item.rfind(':');
    const std::string type(item.substr(0, colon));
    if (colon == std::string_view::npos || topology::findInstanceType(type) == nullptr) {
      return makeError(ErrorCode::kInvalidArgument,
                       "simulate-cluster: expected TYPE:COUNT with a catalog instance type, got " +
                           quoteJsonString(item));
    }
    auto count = parseInt(item.substr(colon + 1), 1, 100'000);
    if (!count) return std::move(count).error().withContext("simulate-cluster: " + type);
    spec.push_back({type, *count});
  }
  if (spec.empty()) {
    return makeError(ErrorCode::kInvalidArgument, "simulate-cluster: no TYPE:COUNT given");
  }
  return spec;
}

std::string simulatedNodeName(const std::string& instanceType, int index) {
  return "sim-" + instanceType + "-" + std::to_string(index);
}

Result<int> addSimulatedNodes(ClusterState& state, const std::vector<SimulatedNodes>& spec) {
  int added = 0;
  for (const SimulatedNodes& group : spec) {
    for (int index = 0; index < group.count; ++index) {
      TORUS_RETURN_IF_ERROR(
          state.upsertNode(simulatedNodeName(group.instanceType, index), group.instanceType),
          "simulate-cluster");
      ++added;
    }
  }
  return added;
}

}  // namespace torus::extender
