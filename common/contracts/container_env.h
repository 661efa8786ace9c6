// The environment a container holding Neuron cores is given, written the same way by the device
// plugin (Allocate) and the DRA driver (the CDI spec), so a pod sees the same variables whichever
// of the two placed it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/topology/core_set.h"
#include "common/topology/node.h"

namespace torus::contracts {

using EnvironmentVariable = std::pair<std::string, std::string>;  // name, value

// The driver's UltraServer mode codes (neuron_ultraserver_mode), which the runtime reads from
// NEURON_RT_ULTRASERVER_MODE and the driver lists in /sys/class/neuron_device/ultraserver_mode.
inline constexpr int kUltraServerModeX4 = 1;
inline constexpr int kUltraServerModeX2H = 2;  // a pair over the horizontal links
inline constexpr int kUltraServerModeX2V = 3;  // a pair over the vertical links
inline constexpr int kUltraServerModeX1 = 4;

// The mode code for running `nodes` (1, 2 or 4) nodes together: X4, X1, and for a pair X2V unless
// the driver lists X2H without X2V (the driver's own order for its 2-node ids, and AWS's
// UltraServer init script's; an unknown list counts as a 4-node election's).
int ultraServerModeCode(int nodes, const topology::UltraServerPosition& position);

// NEURON_RT_VISIBLE_CORES for `cores` (global logical core ids of `node`); NEURON_LOGICAL_NC_CONFIG
// when the chip type can run more than one LNC, the type is not in the catalog (so may), or the
// container asks for an LNC other than the node's; with `ultraServerNodes` (1, 2 or 4:
// UltraServerConfig.ultraserverMode) on an UltraServer node, NEURON_RT_ULTRASERVER_MODE (the mode
// code above, not the node count), _SERVER_ID and _NODE_ID (the 4-node ids for 4, the 2-node ids
// for 2, none for 1). In that order.
std::vector<EnvironmentVariable> neuronContainerEnv(const topology::Node& node,
                                                    const topology::CoreSet& cores, int lnc,
                                                    std::optional<int> ultraServerNodes = {});

}  // namespace torus::contracts
