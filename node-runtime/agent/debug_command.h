// `neuron-node-agent debug [--device=N]`: prints the running agent's debug report (GET /debug on
// its admin address, debug_report.h) as JSON. Run inside the agent's pod, where the loopback
// admin address is: `kubectl neuron debug` runs it through pods/exec. Exit 0 with the report,
// 2 when the agent cannot be asked (its error on stderr).
#pragma once

#include "node-runtime/agent/agent_config.h"

namespace torus::agent {

int runDebugCommand(const AgentConfig& config);

}  // namespace torus::agent
