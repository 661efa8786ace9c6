#include "scheduler-extender/server/state_json.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/base/json_fields.h"
#include "scheduler-extender/server/extender_json.h"

namespace torus::extender {

std::string clusterStateJson(const ClusterState& state) {
  using nlohmann::json;
  std::vector<std::string> names = state.nodeNames();
  std::sort(names.begin(), names.end());
  json nodes = json::array();
  for (const std::string& name : names) {
    const auto node = state.node(name);
    if (!node) continue;  // removed meanwhile
    nodes.push_back({{"name", name},
                     {"instanceType", node->model.instanceType},
                     {"lnc", node->model.lnc},
                     {"cores", node->model.logicalCoreCount()},
                     {"freeCores", node->freeCores.toRangeString()},
                     {"unhealthyDevices",
                      (node->model.allDevices() - node->model.healthyDevices()).toRangeString()}});
  }
  json allocations = json::array();
  for (const Allocation& allocation : state.allocations()) {
    allocations.push_back(
        {{"pod", allocation.podKey},
         {"uid", allocation.podUid},
         {"node", allocation.node},
         {"unit", allocation.unit == topology::AllocationUnit::kCore ? "core" : "device"},
         {"ids", allocation.ids.toRangeString()},
         {"assumed", allocation.assumed}});
  }
  return jsonText(json{{"nodes", std::move(nodes)}, {"allocations", std::move(allocations)}}) +
         "\n";
}

}  // namespace torus::extender
