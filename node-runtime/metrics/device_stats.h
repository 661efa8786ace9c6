// DeviceStats: the driver's counters for one scrape — ECC events per device, memory in use per
// physical core and category, and execution status counters per physical core — read from
// sysfs (neuronN/stats/..., neuronN/neuron_coreM/stats/...). Files a driver version lacks are
// simply absent; a garbled one is skipped and named in `problems`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/topology/node.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::metrics {

struct PhysicalCoreStats {
  std::map<std::string, std::uint64_t> deviceMemory;  // category -> bytes in use
  std::uint64_t hostMemory = 0;
  std::map<std::string, std::uint64_t> status;  // counter -> total since driver load
};

struct DeviceStats {
  std::map<std::string, std::uint64_t> ecc;  // counter name -> total
  std::vector<PhysicalCoreStats> cores;      // by physical core index on the device
};

struct NodeStats {
  std::vector<DeviceStats> devices;  // by device index
  std::vector<std::string> problems;
};

NodeStats readNodeStats(const discovery::DiscoveryRoots& roots, const topology::Node& node);

}  // namespace torus::metrics
