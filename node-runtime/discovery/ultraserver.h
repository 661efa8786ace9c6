// UltraServer position from the driver's class-level attributes
// (/sys/class/neuron_device/{node_id_2,node_id_4,server_id_2,server_id_4,ultraserver_mode}).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/topology/node.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::discovery {

struct UltraServerReading {
  std::optional<topology::UltraServerPosition> position;  // empty when not in an UltraServer
  std::vector<std::string> problems;  // garbled attributes, "busy" during election
};

UltraServerReading readUltraServer(const DiscoveryRoots& roots);

}  // namespace torus::discovery
