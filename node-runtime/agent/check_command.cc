#include "node-runtime/agent/check_command.h"

#include <cstdio>

#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/node_source/node_source.h"
#include "node-runtime/runtime/core_reset.h"
#include "node-runtime/runtime/deep_check_report.h"

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
  const auto busyNow = [&] { return runtime::openDevices(prepared->roots, found->node); };
  const runtime::DeepCheckResult result =
      runtime::runDeepCheck(found->node, prepared->roots, busyNow, deepCheckOptionsOf(config));
  const std::string out =
      config.json ? runtime::deepCheckJson(result) : runtime::deepCheckTable(result);
  std::fputs(out.c_str(), stdout);
  return result.passed() ? 0 : 1;
}

}  // namespace torus::agent
