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
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "common/topology/device_health.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::discovery {

// What one probe of the signals that change while the node runs found: faults (the device leaves
// service) and the signals it could not read (the device's health is unknown, not bad: a counter
// that cannot be read says nothing about the memory it counts).
struct VolatileHealth {
  std::vector<topology::HealthProblem> problems;
  std::vector<std::string> unreadable;  // "stats/hardware/mem_ecc_uncorrected: <why>"

  bool operator==(const VolatileHealth&) const = default;
};

// The health code of an uncorrectable HBM error that awaits repair (trn2's
// mem_ecc_repairable_uncorrected): a reset repairs it (health/recovery_gate.h).
inline constexpr std::string_view kHbmRepairPendingCode = "mem_repairable";

struct DeviceFacts {
  int index = 0;
  std::filesystem::path sysfsPath;  // /sys/class/neuron_device/neuronN
  std::optional<int> coreCount;
  std::optional<std::vector<int>> connected;
  std::string archType;    // info/architecture/arch_type
  std::string familyName;  // info/architecture/instance_type ("Trn2")
  std::string deviceName;  // info/architecture/device_name
  std::string serialNumber;
  std::optional<int> numaNode;
  std::string pciBdf;
  std::string pcieRoot;     // from the function's /sys/bus/pci/devices link (pci_functions.h)
  std::string cpuAffinity;  // the function's local_cpulist
  // Each problem makes the device unhealthy. Static ones come from attributes that describe the
  // device; volatile ones (ECC counters, reset state, the device node) can change at any time and
  // are re-probed often and cheaply (probeVolatileHealth).
  std::vector<std::string> problems;
  VolatileHealth volatileHealth;
};

// The neuronN entries of the class directory in numeric order (neuron10 after neuron9).
Result<std::vector<int>> listDeviceIndices(const DiscoveryRoots& roots);
DeviceFacts scanDevice(const DiscoveryRoots& roots, int index);
// The files behind the health signals that change while the node runs, resolved once so that a
// probe is only a handful of reads per device.
struct VolatileHealthFiles {
  std::string reset;
  std::vector<std::pair<std::string, std::string>> eccCounters;  // name, path
  std::string deviceNode;
};
VolatileHealthFiles volatileHealthFiles(const DiscoveryRoots& roots, int index);
VolatileHealth probeVolatileHealth(const VolatileHealthFiles& files);

}  // namespace torus::discovery
