// Which device sets placement may hand out on a node, per interconnect. Data for placement (the
// device plugin's GetPreferredAllocation and the extender share it), not a placement policy.
//
// Rules (AWS's scheduler documentation, plus one constraint of the runtime):
//  - ring / chain: any run of consecutive device ids. A run that wraps past the last device is
//    NeuronLink-connected on a ring, but its cores are not one contiguous id range, and
//    NEURON_RT_VISIBLE_CORES must be contiguous, so wrapping runs are not offered.
//  - 4x4 torus: 1 device, 4 = one row (a 4-ring), 8 = two adjacent rows (a 2x4 cylinder), 16.
//    Rows 3 and 0 are adjacent on the torus but their cores are not contiguous, so excluded.
//  - a single device: 1.
#pragma once

#include <vector>

#include "common/topology/instance_catalog.h"
#include "common/topology/node.h"

namespace torus::topology {

struct ShapeRules {
  Interconnect interconnect = Interconnect::kNone;
  int deviceCount = 0;
  int torusWidth = 0;
};

ShapeRules shapeRulesOf(const Node& node);

// Device counts a request may ask for, ascending.
std::vector<int> allowedDeviceCounts(const ShapeRules& rules);
bool isAllowedDeviceCount(const ShapeRules& rules, int count);
// Every allowed set of exactly `count` devices, in ascending order of first device.
std::vector<DeviceSet> allowedDeviceSets(const ShapeRules& rules, int count);
bool isAllowedDeviceSet(const ShapeRules& rules, const DeviceSet& devices);

}  // namespace torus::topology
