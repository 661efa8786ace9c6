// What the agent publishes on its Node object: labels other tools select on (torus.dev/lnc,
// torus.dev/instance-type, torus.dev/device-count, torus.dev/healthy-devices, and AWS's
// UltraServer labels), the torus.dev/topology annotation the extender schedules against, and
// the NeuronHealthy condition. Pure: a function of the node model.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/topology/node.h"

namespace torus::agent {

struct NodeMetadata {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  bool healthy = true;
  std::string reason;   // CamelCase, for the condition
  std::string message;  // which devices and why
};

// `pendingLnc`: an LNC change the monitor holds back while cores are held (NodeMonitor); the
// condition says so, since the node will not take it until it drains.
NodeMetadata nodeMetadata(const topology::Node& node, std::optional<int> pendingLnc = {});

// Keys this agent owns on a Node: a key with one of these prefixes that nodeMetadata() no longer
// produces is removed.
bool ownedLabel(const std::string& key);
bool ownedAnnotation(const std::string& key);

}  // namespace torus::agent
