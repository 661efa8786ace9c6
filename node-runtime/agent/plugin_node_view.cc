#include "node-runtime/agent/plugin_node_view.h"

#include "common/base/log.h"

namespace torus::agent {

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
