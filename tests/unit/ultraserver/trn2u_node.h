// A trn2u.48xlarge Node as the API returns it, with AWS's UltraServer labels and a Ready
// condition: what the operator's tests build their UltraServers from.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/contracts/neuron_names.h"

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

}  // namespace torus::ultraserver
