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

// NEURON_RT_VISIBLE_CORES for `cores` (global logical core ids of `node`); NEURON_LOGICAL_NC_CONFIG
// when the chip type can run more than one LNC or the container asks for an LNC other than the
// node's; with `ultraServerMode` on an UltraServer node, the UltraServer mode, server id and node
// id (the 4-node ids for mode 4, the 2-node ids otherwise). In that order.
std::vector<EnvironmentVariable> neuronContainerEnv(const topology::Node& node,
                                                    const topology::CoreSet& cores, int lnc,
                                                    std::optional<int> ultraServerMode = {});

}  // namespace torus::contracts
