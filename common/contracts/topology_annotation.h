// The node annotation torus.dev/topology: what the agent discovered, in compact JSON, so the
// extender schedules against the node as it is (LNC, unhealthy devices) rather than as the
// catalog predicts it.
//
//   {"v":1,"instanceType":"trn2.48xlarge","lnc":2,"devices":16,"coresPerDevice":4,
//    "links":[[12,1,3,4],...],"unhealthy":[5],"unknown":[0,1,2]}
//
// "coresPerDevice" counts logical cores (physical / LNC); "links" lists each device's NeuronLink
// neighbours in the driver's order; "unknown" (present only when not empty) the devices in
// service whose health the agent cannot watch now (topology/device_health.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "common/topology/node.h"

namespace torus::contracts {

struct TopologySummary {
  std::string instanceType;
  int lnc = 1;
  int deviceCount = 0;
  int coresPerDevice = 0;
  std::vector<std::vector<int>> links;
  topology::DeviceSet unhealthy;
  topology::DeviceSet unknown;  // in service, health not watched
};

TopologySummary summarizeTopology(const topology::Node& node);
std::string formatTopologyAnnotation(const TopologySummary& summary);
// Errors name the field and what was wrong with it.
Result<TopologySummary> parseTopologyAnnotation(std::string_view text);

// The node as the agent discovered it, for placement elsewhere (the scheduler extender): the
// catalog row of its instance type at its LNC, with the NeuronLinks and unhealthy devices the
// annotation reports, so both sides place on the same Node. Of a type the catalog lacks (a new
// size the chart placed an agent on by a node label): the devices and cores the annotation
// reports, with no wiring to shape on, as the agent's own discovery models it. Links are taken
// only when they describe every device; errors name what does not match the catalog.
Result<topology::Node> nodeFromTopology(const TopologySummary& summary);

}  // namespace torus::contracts
