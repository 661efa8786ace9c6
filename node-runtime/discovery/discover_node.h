// discoverNode: driver sysfs + /dev + the LNC file -> topology::Node, plus what did not add up.
//
// The node is always built when the driver's class directory exists: a device whose attributes
// are missing or garbled is kept (so core ids stay stable) but marked Unhealthy with a reason that
// names the file and the text; node-level surprises (unknown instance type, one-sided NeuronLink
// reports, a device count or adjacency that differs from the catalog, a bad LNC file) are listed
// in `findings` for the caller to log. The same code reads a real node and the simulator's tree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/topology/node.h"
#include "node-runtime/discovery/device_scan.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::discovery {

struct DiscoveryOptions {
  std::optional<std::string> instanceType;  // overrides the DMI product name
  std::optional<int> lnc;                   // overrides /opt/aws/neuron/logical_nc_config
};

struct Discovery {
  topology::Node node;
  std::string lncSource;           // where the LNC came from, for the startup log
  std::string instanceTypeSource;  // "dmi", "override", "inferred from ..."
  // Where the devices' PCI functions came from: "driver ioctl", "kernel log" or "" (unknown).
  std::string pciSource;
  std::vector<std::string> findings;  // node-level problems, each a complete sentence
  // Per device, the problems found in its descriptive attributes, without the volatile ones
  // (device_scan.h); NodeMonitor combines them with frequent volatile probes.
  std::vector<std::vector<std::string>> staticProblems;
};

Result<Discovery> discoverNode(const DiscoveryRoots& roots, const DiscoveryOptions& options);

// A device's health from the problems of its descriptive attributes (it cannot be described, so
// it is out of service as lost) and a probe of its volatile signals.
topology::DeviceHealth deviceHealthOf(const std::vector<std::string>& staticProblems,
                                      const VolatileHealth& volatileHealth);

}  // namespace torus::discovery
