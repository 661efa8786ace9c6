#include "common/topology/node.h"

#include "common/topology/neuronlink_graph.h"

namespace torus::topology {

std::uint64_t Node::memoryBytes() const {
  std::uint64_t total = 0;
  for (const Device& device : devices)
    total += device.memoryBytes;
  return total;
}

CoreSet Node::coresOfDevice(int device) const {
  if (device < 0 || device >= deviceCount()) return {};
  return CoreSet::range(device * logicalCoresPerDevice(), logicalCoresPerDevice());
}

CoreSet Node::coresOfDevices(const DeviceSet& selected) const {
  CoreSet cores;
  selected.forEach([&](int device) { cores |= coresOfDevice(device); });
  return cores;
}

int Node::deviceOfCore(int core) const {
  const int perDevice = logicalCoresPerDevice();
  if (perDevice <= 0 || core < 0 || core >= logicalCoreCount()) return -1;
  return core / perDevice;
}

DeviceSet Node::devicesOfCores(const CoreSet& cores) const {
  DeviceSet result;
  cores.forEach([&](int core) {
    const int device = deviceOfCore(core);
    if (device >= 0) result.insert(device);
  });
  return result;
}

DeviceSet Node::allDevices() const {
  return DeviceSet::range(0, deviceCount());
}

DeviceSet Node::healthyDevices() const {
  DeviceSet result;
  for (const Device& device : devices) {
    if (device.health.healthy) result.insert(device.index);
  }
  return result;
}

DeviceSet Node::unknownHealthDevices() const {
  DeviceSet result;
  for (const Device& device : devices) {
    if (device.health.state() == HealthState::kUnknown) result.insert(device.index);
  }
  return result;
}

CoreSet Node::allCores() const {
  return CoreSet::range(0, logicalCoreCount());
}

Result<Node> catalogNode(std::string_view instanceType, int lnc) {
  const InstanceType* type = findInstanceType(instanceType);
  if (type == nullptr) {
    return makeError(ErrorCode::kNotFound,
                     "instance type \"" + std::string(instanceType) + "\" is not in the catalog");
  }
  const int effectiveLnc = lnc == 0 ? type->defaultLnc : lnc;
  if (!supportsLnc(*type, effectiveLnc)) {
    return makeError(ErrorCode::kInvalidArgument, "LNC " + std::to_string(effectiveLnc) +
                                                      " is not supported on " +
                                                      std::string(type->name) + " (supported: 1" +
                                                      (type->maxLnc >= 2 ? ", 2)" : ")"));
  }
  Node node;
  node.instanceType = std::string(type->name);
  node.catalog = type;
  node.interconnect = type->interconnect;
  node.torusWidth = type->torusWidth;
  node.physicalCoresPerDevice = type->physicalCoresPerDevice;
  node.lnc = effectiveLnc;
  node.devices.reserve(static_cast<std::size_t>(type->deviceCount));
  for (int index = 0; index < type->deviceCount; ++index) {
    Device device;
    device.index = index;
    device.physicalCores = type->physicalCoresPerDevice;
    device.memoryBytes = type->memoryBytesPerDevice;
    device.connected = driverNeighbours(*type, index);
    node.devices.push_back(std::move(device));
  }
  return node;
}

}  // namespace torus::topology
