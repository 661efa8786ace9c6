#include "common/contracts/container_env.h"

#include "common/contracts/neuron_names.h"

namespace torus::contracts {

std::vector<EnvironmentVariable> neuronContainerEnv(const topology::Node& node,
                                                    const topology::CoreSet& cores, int lnc,
                                                    std::optional<int> ultraServerMode) {
  std::vector<EnvironmentVariable> env;
  env.emplace_back(kVisibleCoresEnv, topology::visibleCoresText(cores));
  if ((node.catalog != nullptr && node.catalog->maxLnc > 1) || lnc != node.lnc) {
    env.emplace_back(kLogicalNcConfigEnv, std::to_string(lnc));
  }
  if (ultraServerMode && node.ultraServer) {
    const topology::UltraServerPosition& position = *node.ultraServer;
    const bool fourNodes = *ultraServerMode >= 4;
    env.emplace_back(kUltraServerModeEnv, std::to_string(*ultraServerMode));
    env.emplace_back(kUltraServerServerIdEnv, fourNodes ? position.serverId4 : position.serverId2);
    env.emplace_back(kUltraServerNodeIdEnv,
                     std::to_string(fourNodes ? position.nodeId4 : position.nodeId2));
  }
  return env;
}

}  // namespace torus::contracts
