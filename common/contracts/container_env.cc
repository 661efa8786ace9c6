#include "common/contracts/container_env.h"

#include <algorithm>

#include "common/contracts/neuron_names.h"

namespace torus::contracts {

int ultraServerModeCode(int nodes, const topology::UltraServerPosition& position) {
  if (nodes >= 4) return kUltraServerModeX4;
  if (nodes <= 1) return kUltraServerModeX1;
  const auto& modes = position.supportedModes;
  const bool vertical = std::find(modes.begin(), modes.end(), kUltraServerModeX2V) != modes.end();
  const bool horizontal = std::find(modes.begin(), modes.end(), kUltraServerModeX2H) != modes.end();
  return vertical || !horizontal ? kUltraServerModeX2V : kUltraServerModeX2H;
}

std::vector<EnvironmentVariable> neuronContainerEnv(const topology::Node& node,
                                                    const topology::CoreSet& cores, int lnc,
                                                    std::optional<int> ultraServerNodes) {
  std::vector<EnvironmentVariable> env;
  env.emplace_back(kVisibleCoresEnv, topology::visibleCoresText(cores));
  // On a type the catalog lacks nothing says which LNC the runtime would pick by itself (it picks
  // 2 on trn2), so the one the ids are counted in is always said.
  if (node.catalog == nullptr || node.catalog->maxLnc > 1 || lnc != node.lnc) {
    env.emplace_back(kLogicalNcConfigEnv, std::to_string(lnc));
  }
  if (ultraServerNodes && node.ultraServer) {
    const topology::UltraServerPosition& position = *node.ultraServer;
    const int mode = ultraServerModeCode(*ultraServerNodes, position);
    env.emplace_back(kUltraServerModeEnv, std::to_string(mode));
    if (mode == kUltraServerModeX1) {
      // What the driver reports outside an UltraServer, and what AWS's init script writes for a
      // one-node configuration.
      env.emplace_back(kUltraServerServerIdEnv, "0000000000000000");
      env.emplace_back(kUltraServerNodeIdEnv, "-1");
    } else {
      const bool four = mode == kUltraServerModeX4;
      env.emplace_back(kUltraServerServerIdEnv, four ? position.serverId4 : position.serverId2);
      env.emplace_back(kUltraServerNodeIdEnv,
                       std::to_string(four ? position.nodeId4 : position.nodeId2));
    }
  }
  return env;
}

}  // namespace torus::contracts
