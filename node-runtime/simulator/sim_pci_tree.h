// The PCI side of a simulated tree: each function of the layout (sim_pci_layout.h) under its root
// complex, linked from /sys/bus/pci/devices and from its driver's directory as the kernel links
// a bound device, with the attributes discovery reads (vendor, device, numa_node, local_cpulist)
// and the Neuron devices' memory BAR.
#pragma once

#include <filesystem>

#include "common/base/result.h"
#include "common/topology/instance_catalog.h"
#include "node-runtime/simulator/sim_pci_layout.h"
#include "node-runtime/simulator/sim_tree_writer.h"

namespace torus::simulator {

// The Neuron driver's PCI driver name (neuron_pci.c:369-374); the module is "neuron" (Kbuild:1).
inline constexpr const char* kNeuronPciDriver = "neuron-driver";

// Writes the layout's functions under `sys`: the Neuron devices bound to kNeuronPciDriver, the
// EFA interfaces bound to "efa".
Result<void> writePciFunctions(TreeWriter& out, const std::filesystem::path& sys,
                               const topology::InstanceType& type,
                               const SimulatedPciLayout& layout);

}  // namespace torus::simulator
