// Which PCI function each Neuron device is: the one place Torus learns it, for discovery (PCI
// attributes, NUMA, pcieRoot), the kernel log (a line that names a function) and the deep check
// (which BAR holds a device's memory).
//
// The driver does not number its devices in PCI address order: on trn1, inf2 and trn2 it derives
// each index from a firmware routing id (aws-neuron-driver 2.24.7.0, neuron_pci.c:268,
// v2/neuron_dhal_v2.c:1047-1100, v3/neuron_dhal_v3.c:1300-1349), and its class devices have no
// PCI parent to read it from (neuron_cdev.c:3069). So the map comes from what the driver says:
//   1. its ioctl NEURON_IOCTL_DEVICE_BDF_EXT (driver_bdf_query.h), where a device node may be
//      opened; else
//   2. the line it logs for each device while loading, "** BDF: bb:ss.f => nd[N] (routing id: R)"
//      (v2:1102, v3:1351), while the kernel log still holds it (kernel_ring.h); or
//   3. on inf1 only, whose driver numbers devices by probe order and logs no such line
//      (neuron_pci.c:256-258), address order, when every bound function has an index.
// Each answer must name a function bound to the driver (/sys/bus/pci/drivers/neuron-driver,
// neuron_pci.c:369-374); where the two sources disagree the ioctl wins and the disagreement is a
// finding. A device neither source places has no PCI function: no guess from address order,
// which would give one chip another's memory and NUMA node.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node-runtime/discovery/discovery_roots.h"

namespace torus::discovery {

// Whether `text` is a PCI function address as the kernel writes it: "DDDD:BB:DD.F", lower-case
// hexadecimal, function 0-7.
bool isPciAddress(std::string_view text);

// The functions bound to the Neuron driver, in address order: which functions are Neuron devices,
// not which device each is. Empty when the directory cannot be read.
std::vector<std::string> neuronPciFunctions(const DiscoveryRoots& roots);

// One "** BDF" line of the driver's: "bb:ss.f" (no domain) and the index it gave.
struct DriverProbeLine {
  std::string busSlotFunction;
  int index = 0;
  int routingId = 0;
};
// The probe line in `line` (any prefix: a kmsg record, syslog(2)'s "<3>[ 4.2] ", pr_fmt's
// "neuron:func: "); nullopt when it is none.
std::optional<DriverProbeLine> parseDriverProbeLine(std::string_view line);

struct NeuronPciMap {
  std::map<int, std::string> functionOf;  // device index -> "0000:cc:00.0"
  // "driver ioctl", "kernel log", "probe order (inf1)", or "" (none).
  std::string source;
  std::vector<std::string> findings;  // each a complete sentence
};

// Index -> function from the probe lines in `log` (oldest first; a later load of the driver
// replaces an earlier one's lines), each resolved against `bound` (neuronPciFunctions) for its
// domain and kept only when it names exactly one of them and is one of `indices`.
NeuronPciMap mapFromDriverLog(std::string_view log, const std::vector<std::string>& bound,
                              const std::vector<int>& indices);

// The map for the devices `indices` (those the class directory lists): the ioctl through
// roots.deviceNode(first index), else the kernel log at roots.kernelLog(), else nothing.
NeuronPciMap mapNeuronPciFunctions(const DiscoveryRoots& roots, const std::vector<int>& indices);

// The PCIe root complex of function `bdf` as Kubernetes' standard attribute
// resource.kubernetes.io/pcieRoot names it ("pci0000:10"): the first directory under
// /sys/devices of the function's /sys/bus/pci/devices/<bdf> link. "" when the link is missing or
// does not lead under a pci root.
std::string pcieRootOf(const DiscoveryRoots& roots, const std::string& bdf);

// The NUMA node of the PCI function whose sysfs directory is `function` (its numa_node file);
// nullopt when unknown (-1) or unreadable.
std::optional<int> numaNodeOfFunction(const std::filesystem::path& function);

// The CPUs local to that function (its local_cpulist, "48-95,144-191"); "" when unreadable.
std::string cpuListOfFunction(const std::filesystem::path& function);

}  // namespace torus::discovery
