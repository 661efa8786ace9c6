#include "ultraserver-operator/model/pods_first.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/kube/object_fields.h"

namespace torus::ultraserver {

using kube::stringAt;

std::map<std::string, std::set<std::string>> nodesGivenUp(const std::vector<Workload>& workloads,
                                                          const std::vector<Allocation>& current,
                                                          const AllocationPlan& plan) {
  std::set<std::string> live;
  for (const Workload& workload : workloads) {
    if (!workload.deleting) live.insert(workload.ref());
  }
  std::map<std::string, std::set<std::string>> held;
  for (const Allocation& allocation : plan.allocations)
    held[allocation.workloadRef].insert(allocation.nodes.begin(), allocation.nodes.end());
  std::map<std::string, std::set<std::string>> givenUp;
  for (const Allocation& allocation : current) {
    if (!live.count(allocation.workloadRef)) continue;
    const std::set<std::string>& keeps = held[allocation.workloadRef];
    for (const std::string& node : allocation.nodes) {
      if (!keeps.count(node)) givenUp[allocation.workloadRef].insert(node);
    }
  }
  return givenUp;
}

bool podsStillOn(const std::vector<nlohmann::json>& pods, const std::set<std::string>& nodes,
                 const std::vector<UltraServer>& servers) {
  std::set<std::string> ready;
  for (const UltraServer& server : servers) {
    for (const MemberNode& member : server.nodes) {
      if (member.ready) ready.insert(member.name);
    }
  }
  return std::any_of(pods.begin(), pods.end(), [&](const nlohmann::json& pod) {
    const std::string phase = stringAt(pod, {"status", "phase"});
    const std::string node = stringAt(pod, {"spec", "nodeName"});
    return phase != "Succeeded" && phase != "Failed" && nodes.count(node) && ready.count(node);
  });
}

}  // namespace torus::ultraserver
