#include "device-plugin/allocation.h"

#include "common/base/strings.h"
#include "common/contracts/container_env.h"

namespace torus::plugin {

std::vector<AdvertisedDevice> advertisedDevices(ResourceKind kind, const topology::Node& node,
                                                const topology::CoreSet& blocked) {
  std::vector<AdvertisedDevice> devices;
  allIds(kind, node).forEach([&](int id) {
    const int deviceIndex = countsDevices(kind) ? id : node.deviceOfCore(id);
    const topology::Device& device = node.devices[static_cast<std::size_t>(deviceIndex)];
    AdvertisedDevice entry{std::to_string(id), true, device.numaNode, ""};
    if (!device.health.healthy) {
      entry.healthy = false;
      entry.unhealthyReason = "neuron" + std::to_string(deviceIndex) + ": " + device.health.reason;
    } else if (blocked.contains(id)) {
      entry.healthy = false;
      entry.unhealthyReason = "held through another resource";
    }
    devices.push_back(std::move(entry));
  });
  return devices;
}

Result<ContainerAllocation> allocateContainer(ResourceKind kind, const topology::Node& node,
                                              const std::string& devRoot,
                                              const topology::CoreSet& ids,
                                              const topology::CoreSet& blocked,
                                              std::optional<int> ultraServerNodes) {
  if (ids.empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     std::string(resourceName(kind)) + ": a container request with no ids");
  }
  std::vector<std::string> unavailable;
  ids.forEach([&](int id) {
    const int deviceIndex = countsDevices(kind) ? id : node.deviceOfCore(id);
    const topology::Device& device = node.devices[static_cast<std::size_t>(deviceIndex)];
    if (!device.health.healthy) {
      unavailable.push_back(std::to_string(id) + " (neuron" + std::to_string(deviceIndex) +
                            " unhealthy: " + device.health.reason + ")");
    } else if (blocked.contains(id)) {
      unavailable.push_back(std::to_string(id) + " (held through another resource)");
    }
  });
  if (!unavailable.empty()) {
    return makeError(
        ErrorCode::kInvalidArgument,
        std::string(resourceName(kind)) + ": ids not available: " + joinFirst(unavailable, ", "));
  }
  ContainerAllocation allocation;
  allocation.cores = coresOfIds(kind, node, ids);
  node.devicesOfCores(allocation.cores).forEach([&](int device) {
    const std::string name = "neuron" + std::to_string(device);
    allocation.deviceNodes.push_back({devRoot + "/" + name, "/dev/" + name});
  });
  for (auto& [name, value] :
       contracts::neuronContainerEnv(node, allocation.cores, node.lnc, ultraServerNodes)) {
    allocation.env[name] = std::move(value);
  }
  return allocation;
}

}  // namespace torus::plugin
