// NodeSource: where a binary gets its node from — the real driver's trees, or a tree the simulator
// writes first — and the settings that choose it, declared once for neuron-ls and the agent.
//
// After the simulator has written its tree, everything runs the same discovery code on it; this
// is the only place that knows the difference.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/temp_dir.h"
#include "common/config/settings.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/simulator/sim_fault.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus::node_source {

struct NodeSourceOptions {
  std::string simulate;     // instance type to simulate; empty = read the real node
  std::string simulateDir;  // where to write the simulated tree; empty = a temp dir
  std::vector<simulator::Fault> faults;
  // trn2u: which UltraServer (its serial) and which of its four nodes the simulated node is.
  std::optional<std::uint64_t> ultraServerSerial;  // unset: the simulator's one UltraServer
  int ultraServerPosition = 0;
  std::optional<int> pciDomain;  // the simulated functions' PCI domain; unset: 0
  std::string sysfsRoot = "/sys";
  std::string devRoot = "/dev";
  std::string awsRoot = "/opt/aws";
  std::string stateDir;      // empty: nothing kept across restarts
  std::string instanceType;  // overrides the DMI product name
  std::optional<int> lnc;
};

void addNodeSourceSettings(config::SettingTable& table, NodeSourceOptions* options);

class PreparedNode {
 public:
  discovery::DiscoveryRoots roots;

  PreparedNode() = default;
  PreparedNode(PreparedNode&&) = default;
  PreparedNode& operator=(PreparedNode&&) = default;

 private:
  friend Result<PreparedNode> prepareNode(const NodeSourceOptions& options);
  std::optional<TempDir> tempDir_;  // owns the simulated tree when no --simulate-dir was given
};

// Writes the simulated tree when asked to and returns the roots discovery should read.
Result<PreparedNode> prepareNode(const NodeSourceOptions& options);

discovery::DiscoveryOptions discoveryOptionsOf(const NodeSourceOptions& options);

}  // namespace torus::node_source
