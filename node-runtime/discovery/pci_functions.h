// The Neuron driver's PCI functions: which addresses are this node's devices, and which device
// each is. The class devices (neuronN) have no PCI parent to read this from, but the driver binds
// its functions under /sys/bus/pci/drivers/neuron/<address>, and it numbers its devices in probe
// order, which is PCI address order: the Nth function in address order is neuronN.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node-runtime/discovery/discovery_roots.h"

namespace torus::discovery {

// Whether `text` is a PCI function address as the kernel writes it: "DDDD:BB:DD.F", lower-case
// hexadecimal, function 0-7.
bool isPciAddress(std::string_view text);

// The functions bound to the neuron driver, in address order (so the Nth is neuronN); the
// directory's other entries (bind, module, ...) are skipped. Empty when it cannot be read.
std::vector<std::string> neuronPciFunctions(const DiscoveryRoots& roots);

// The PCIe root complex of function `bdf` as Kubernetes' standard attribute
// resource.kubernetes.io/pcieRoot names it ("pci0000:10"): the first directory under
// /sys/devices of the function's /sys/bus/pci/devices/<bdf> link. "" when the link is missing or
// does not lead under a pci root.
std::string pcieRootOf(const DiscoveryRoots& roots, const std::string& bdf);

// The NUMA node of the PCI function whose sysfs directory is `function` (its numa_node file);
// nullopt when unknown (-1) or unreadable.
std::optional<int> numaNodeOfFunction(const std::filesystem::path& function);

}  // namespace torus::discovery
