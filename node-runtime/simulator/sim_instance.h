// The instance a simulated node is, by the name EC2 gives it: a type of Torus's catalog, or one
// EC2 sells that the catalog leaves out, so the product can be tried on a type it does not know
// (the node's DMI product name then names a type discovery cannot look up, as on a real node the
// day AWS launches a size).
//
// The driver knows no instance names: it probes the chips it finds and fills its tables from how
// many there are. So an uncatalogued instance is described here by its chips alone, and the
// driver's own rules decide the rest (driverListsNeighbours).
//
// Owns: the uncatalogued instances and the driver's rule for connected_devices. Does not own:
// writing them (sim_tree.cc) or where their chips sit on PCI (sim_pci_layout.h).
#pragma once

#include <string_view>

#include "common/base/result.h"
#include "common/topology/instance_catalog.h"

namespace torus::simulator {

struct SimulatedInstance {
  topology::InstanceType type;
  bool catalogued = true;
  // For an uncatalogued instance: where its description comes from.
  std::string_view source;
};

// The instance named `name` (HyperPod's "ml." prefix accepted, as the catalog accepts it), or an
// error naming every instance the simulator can serve.
Result<SimulatedInstance> simulatedInstance(std::string_view name);

// Whether the driver fills every device's connected_devices on an instance with `deviceCount`
// chips of `generation`. v2 and v3 print a static table only for the counts they have one for,
// counted once at load, and "\n" otherwise (fw_io_topology_v2, v2/neuron_dhal_v2.c:700-736:
// trn1 when the count is a multiple of 16, inf2 when it is 6 or 12; fw_io_topology_v3,
// v3/neuron_dhal_v3.c:916-940: trn2 when a multiple of 16). v1 (inf1) asks the hardware for its
// east and west neighbours whatever the count (fw_io_topology_v1, v1/neuron_dhal_v1.c:511).
bool driverListsNeighbours(topology::Generation generation, int deviceCount);

}  // namespace torus::simulator
