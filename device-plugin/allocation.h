// The pure parts of the kubelet protocol: what ListAndWatch advertises and what Allocate gives a
// container, as plain values. plugin_service.cc only copies these into protobuf messages.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/topology/core_set.h"
#include "common/topology/node.h"
#include "device-plugin/resource_kind.h"

namespace torus::plugin {

struct AdvertisedDevice {
  std::string id;
  bool healthy = true;
  std::optional<int> numaNode;
  std::string unhealthyReason;  // for the log; kubelet only sees Healthy/Unhealthy
};

// Every id of `kind`: Unhealthy when its device is, or when `blocked` (held through another
// resource, see assignments.h).
std::vector<AdvertisedDevice> advertisedDevices(ResourceKind kind, const topology::Node& node,
                                                const topology::CoreSet& blocked);

struct DeviceNode {
  std::string hostPath;       // where the node is on the host (a simulated tree's dev/ in tests)
  std::string containerPath;  // always /dev/neuronN inside the container
};

struct ContainerAllocation {
  std::vector<DeviceNode> deviceNodes;
  std::map<std::string, std::string> env;
  topology::CoreSet cores;  // the global logical cores the container gets
};

// Checks the ids parseIds made of kubelet's (at least one; each healthy and not held through
// another resource) and builds the container's devices and environment; with `ultraServerNodes`
// (the hand-off of a gang running as one UltraServer job) the environment names the node's place
// in it. Errors are InvalidArgument naming the ids.
Result<ContainerAllocation> allocateContainer(ResourceKind kind, const topology::Node& node,
                                              const std::string& devRoot,
                                              const topology::CoreSet& ids,
                                              const topology::CoreSet& blocked,
                                              std::optional<int> ultraServerNodes = {});

}  // namespace torus::plugin
