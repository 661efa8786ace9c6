// Device scan: the neuronN directories of the driver's sysfs class, read into DeviceFacts.
//
// A missing or malformed attribute never fails the scan: it becomes a problem on that device
// (which discovery turns into Unhealthy with the reason), so one bad device cannot take the
// node down. Only "no driver class directory at all" is an error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::discovery {

struct DeviceFacts {
  int index = 0;
  std::filesystem::path sysfsPath;  // /sys/class/neuron_device/neuronN
  std::optional<int> coreCount;
  std::optional<std::vector<int>> connected;
  std::string archType;    // info/architecture/arch_type
  std::string familyName;  // info/architecture/instance_type ("Trn2")
  std::string deviceName;  // info/architecture/device_name
  std::string serialNumber;
  std::optional<int> resetState;
  bool deviceNodePresent = false;
  std::optional<int> numaNode;
  std::string pciBdf;
  std::vector<std::string> problems;  // each one makes the device unhealthy
};

// The neuronN entries of the class directory in numeric order (neuron10 after neuron9).
Result<std::vector<int>> listDeviceIndices(const DiscoveryRoots& roots);
DeviceFacts scanDevice(const DiscoveryRoots& roots, int index);

}  // namespace torus::discovery
