// What the operator's tests build their cases from: a trn2u.48xlarge Node as the API returns it,
// with AWS's UltraServer labels and a Ready condition, and a workload of trn2u nodes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/contracts/neuron_names.h"
#include "common/contracts/neuron_ultraserver.h"

namespace torus::ultraserver {

inline nlohmann::json nodeObject(const std::string& name, const std::string& serverId, int nodeId,
                                 bool ready = true,
                                 const std::string& readySince = "2026-11-27T09:00:00Z") {
  const std::string prefix = contracts::kUltraServerLabelPrefix;
  return {{"metadata",
           {{"name", name},
            {"labels",
             {{prefix + "server-id-4", serverId},
              {prefix + "node-id-4", std::to_string(nodeId)},
              {prefix + "server-id-2", serverId + (nodeId < 2 ? "a" : "b")},
              {"node.kubernetes.io/instance-type", "trn2u.48xlarge"}}}}},
          {"status",
           {{"conditions", nlohmann::json::array({{{"type", "Ready"},
                                                   {"status", ready ? "True" : "False"},
                                                   {"lastTransitionTime", readySince}}})}}}};
}

// `servers` UltraServers of `size` nodes each, in namespace ml, created at `created`.
inline contracts::Workload workload(
    const std::string& name, int size, int servers, const std::string& created,
    contracts::FailureStrategy strategy = contracts::FailureStrategy::kNoOp) {
  contracts::Workload w;
  w.nameSpace = "ml";
  w.name = name;
  w.uid = "uid-" + name;
  w.createdAt = created;
  w.instanceType = "trn2u.48xlarge";
  w.topologySize = size;
  w.serverCount = servers;
  w.strategy = strategy;
  w.claimTemplate = name;
  return w;
}

}  // namespace torus::ultraserver
