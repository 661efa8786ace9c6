// The node model: what one Neuron node has (devices, cores, memory, NeuronLink neighbours, health),
// independent of where the facts came from (driver sysfs, the catalog, or a topology annotation).
//
// Logical core ids are global on the node: core k of device d has id d * coresPerDevice + k,
// coresPerDevice = physical cores / LNC. NEURON_RT_VISIBLE_CORES, kubelet device ids and our
// annotations all use these ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "common/topology/core_set.h"
#include "common/topology/device_health.h"
#include "common/topology/instance_catalog.h"

namespace torus::topology {

// Device indices use the same fixed set type as cores (a node has at most 64 devices).
using DeviceSet = CoreSet;

struct Device {
  int index = 0;
  int physicalCores = 0;
  std::uint64_t memoryBytes = 0;
  std::vector<int> connected;  // NeuronLink neighbours in the driver's order
  std::optional<int> numaNode;
  std::string pciBdf;       // "0000:10:1c.0"; empty when unknown
  std::string pcieRoot;     // its PCIe root complex, "pci0000:10"; empty when unknown
  std::string cpuAffinity;  // the CPUs local to its function, "48-95,144-191"; empty when unknown
  std::string serialNumber;
  DeviceHealth health;
};

// Where this node sits in a Trn2 UltraServer (class-level driver attributes).
struct UltraServerPosition {
  int nodeId2 = -1;
  int nodeId4 = -1;
  std::string serverId2;
  std::string serverId4;
  std::vector<int> supportedModes;  // 1=X4, 2=X2H, 3=X2V, 4=X1

  bool operator==(const UltraServerPosition&) const = default;
};

struct Node {
  std::string instanceType;               // EC2 name, or what discovery could tell
  const InstanceType* catalog = nullptr;  // nullptr when the type is not in the catalog
  Interconnect interconnect = Interconnect::kNone;
  int torusWidth = 0;
  int physicalCoresPerDevice = 0;
  int lnc = 1;
  std::vector<Device> devices;
  std::optional<UltraServerPosition> ultraServer;
  std::string driverVersion;  // the Neuron kernel driver's version; empty when unknown

  int deviceCount() const { return static_cast<int>(devices.size()); }
  int logicalCoresPerDevice() const { return lnc > 0 ? physicalCoresPerDevice / lnc : 0; }
  int logicalCoreCount() const { return deviceCount() * logicalCoresPerDevice(); }
  std::uint64_t memoryBytes() const;

  CoreSet coresOfDevice(int device) const;
  CoreSet coresOfDevices(const DeviceSet& devices) const;
  int deviceOfCore(int core) const;
  DeviceSet devicesOfCores(const CoreSet& cores) const;
  DeviceSet allDevices() const;
  DeviceSet healthyDevices() const;
  // In service, but a source of their health is lost (HealthState::kUnknown).
  DeviceSet unknownHealthDevices() const;
  CoreSet allCores() const;
};

// The model the catalog predicts for `instanceType` at `lnc` (0 = the type's default LNC):
// what a healthy node of that type reports. Errors name an unknown type or an unsupported LNC.
Result<Node> catalogNode(std::string_view instanceType, int lnc = 0);

}  // namespace torus::topology
