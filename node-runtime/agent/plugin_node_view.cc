#include "node-runtime/agent/plugin_node_view.h"

#include <algorithm>

#include "common/base/log.h"

namespace torus::agent {

reset::ResetPolicy containerStartResetPolicy(std::chrono::milliseconds limit) {
  reset::ResetPolicy policy;
  policy.readyTimeout = std::min(limit, kContainerStartResetBudget);
  if (limit > kContainerStartResetBudget) {
    policy.whenStillResetting = "; the driver may take up to " +
                                std::to_string(limit.count() / 1000) +
                                " s, the reset goes on and kubelet retries the container's start";
  }
  return policy;
}

kubelet::NodeSnapshot PluginNodeView::snapshot() const {
  return {monitor_.node(), monitor_.roots().dev.string(), monitor_.generation()};
}

Result<void> PluginNodeView::prepareCores(const topology::CoreSet& cores,
                                          const topology::CoreSet& inUseElsewhere) {
  const topology::Node node = monitor_.node();
  const topology::DeviceSet devices = node.devicesOfCores(cores);
  // A reset clears every core of a device: never do it under another tenant's running cores.
  const topology::DeviceSet shared = devices & node.devicesOfCores(inUseElsewhere);
  if (!shared.empty()) {
    TORUS_LOG(Info, Runtime, "not resetting devices shared with running containers",
              {"devices", shared.toRangeString()}, {"cores", cores.toRangeString()});
  }
  const topology::DeviceSet toReset = devices - shared;
  TORUS_RETURN_IF_ERROR(reset::resetDevices(monitor_.roots(), toReset, policy_),
                        "preparing cores " + cores.toRangeString());
  if (!toReset.empty()) {
    TORUS_LOG(Info, Runtime, "devices reset for a new container",
              {"devices", toReset.toRangeString()});
  }
  return okResult();
}

}  // namespace torus::agent
