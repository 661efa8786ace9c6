// The simulator: writes the Neuron driver's sysfs tree, /dev/neuronN nodes and the LNC file for
// an instance type (one of the catalog's, or one sim_instance.h describes) into a directory, laid
// out as on a real node (DIR/sys/class/neuron_device/neuronN ->
// DIR/sys/devices/virtual/neuron_device/neuronN, ...).
//
// Discovery then reads DIR through DiscoveryRoots::under(DIR) with no idea it is simulated.
// Device nodes are character devices cloned from /dev/null's major:minor when we may mknod
// (root), so a real container runtime can pass them into containers; plain files otherwise.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "node-runtime/discovery/discovery_roots.h"
#include "node-runtime/simulator/sim_fault.h"

namespace torus::simulator {

inline constexpr std::uint64_t kDefaultUltraServerSerial = 0x0a11ce0000000100ULL;

struct SimulationSpec {
  std::string instanceType;  // e.g. "trn2.48xlarge" (simulatedInstance, sim_instance.h)
  std::optional<int> lnc;    // written to logical_nc_config; default: the type's default
  std::vector<Fault> faults;
  bool characterDevices = true;  // try mknod; fall back to plain files when not permitted
  int ultraServerNodeId = 0;     // trn2u: this node's position (0..3) in its UltraServer
  // trn2u: the UltraServer's serial number, as the driver reads it from the election; the nodes
  // of one simulated UltraServer share it, and it seeds the devices' serial numbers so no two
  // simulated nodes report the same chip.
  std::uint64_t ultraServerSerial = kDefaultUltraServerSerial;
  // Per-link speed files (neuronlink_attributes.h). The reference driver has none, so neither
  // does a simulated node unless asked; a slow-link fault writes them for its link.
  bool linkSpeedFiles = false;
  // The PCI domain of every function. A real instance has one, 0000; simulated nodes that share
  // one kernel log (a test bed) need domains of their own, as real nodes have kernels of their
  // own, or a line naming a function would be every such node's.
  int pciDomain = 0;
};

struct SimulatedTree {
  std::filesystem::path root;
  bool characterDevices = false;  // whether /dev nodes are real character devices
  int files = 0;                  // attributes written, for the log
  bool reused = false;            // an existing tree of the same type, left as it was
  discovery::DiscoveryRoots roots() const { return discovery::DiscoveryRoots::under(root); }
};

// The simulator's stand-in for the Neuron runtime's collective self-test, at the path a Neuron
// install has it (DIR/opt/aws/neuron/bin/nccom-test): for the devices in TORUS_DEEP_CHECK_RING it
// checks that each lists the next in connected_devices, so a cut link on the path fails it as a
// collective across it would. For --deep-check-command on a simulated node.
std::filesystem::path standInCheckCommand(const SimulatedTree& tree);

// Writes the tree into `root`, or reuses the tree a previous run wrote there for the same instance
// type (faults injected since are kept; `spec.faults` are applied on top). A directory holding
// another type's tree, or something else under sys/, is refused.
Result<SimulatedTree> writeSimulatedTree(const SimulationSpec& spec,
                                         const std::filesystem::path& root);

}  // namespace torus::simulator
