// `neuron-node-agent check`: runs the deep health check once against this node (or a simulated
// one) without starting the agent, prints tables or --json, and exits 0 when everything passed,
// 1 when a device, link or the AllReduce ring failed, 2 when the node could not be checked.
#pragma once

#include "node-runtime/agent/agent_config.h"

namespace torus::agent {

int runCheckCommand(const AgentConfig& config);

}  // namespace torus::agent
