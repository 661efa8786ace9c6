#include "node-runtime/agent/check_command.h"

#include <cstdio>

#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/health/deep_check/deep_check_report.h"
#include "node-runtime/node_source/node_source.h"
#include "node-runtime/reset/core_reset.h"

namespace torus::agent {

int runCheckCommand(const AgentConfig& config) {
  auto prepared = node_source::prepareNode(config.node);
  if (!prepared) {
    std::fprintf(stderr, "neuron-node-agent check: %s\n", prepared.error().message.c_str());
    return 2;
  }
  auto found =
      discovery::discoverNode(prepared->roots, node_source::discoveryOptionsOf(config.node));
  if (!found) {
    std::fprintf(stderr, "neuron-node-agent check: %s\n", found.error().message.c_str());
    return 2;
  }
  // Without the agent's view of kubelet's allocations, a device is in use when a process has it
  // open, the same test the device reset uses, asked again before each phase.
  const auto busyNow = [&] { return reset::openDevices(prepared->roots, found->node); };
  const health::DeepCheckResult result =
      health::runDeepCheck(found->node, prepared->roots, busyNow, deepCheckOptionsOf(config));
  const std::string out =
      config.json ? health::deepCheckJson(result) : health::deepCheckTable(result);
  std::fputs(out.c_str(), stdout);
  return result.passed() ? 0 : 1;
}

}  // namespace torus::agent
