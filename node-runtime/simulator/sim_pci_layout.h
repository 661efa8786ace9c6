// Where a simulated node's Neuron devices and EFA interfaces sit on PCI, and which device number
// the driver gives each: the layouts AWS publishes from real instances where there is one, an
// assumption said as such where there is none.
//
// The driver does not number devices in PCI address order. On v2 and v3 hardware it reads each
// chip's firmware routing id while probing and derives the index from it
// (aws-neuron-driver 2.24.7.0, v2/neuron_dhal_v2.c:1047-1100 for trn1 and inf2,
// v3/neuron_dhal_v3.c:1300-1349 for trn2); only v1 (inf1) numbers in probe order
// (neuron_pci.c:256-258). Each probe logs `** BDF: bb:ss.f => nd[N] (routing id: R)`
// (v2:1102, v3:1351), which the simulated kernel log carries too.
//
// Owns: the layouts and the driver's routing-id tables. Does not own: writing them
// (sim_pci_tree.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/topology/instance_catalog.h"

namespace torus::simulator {

// v2/neuron_dhal_v2.c:1047-1051 (trn1 only; inf2 takes the routing id as it is, :1097-1100).
inline constexpr std::array<int, 16> kTrn1RoutingIdToIndex = {0,  4, 1,  5, 3,  7,  2,  6,
                                                              12, 8, 13, 9, 15, 11, 14, 10};
// v3/neuron_dhal_v3.c:1300-1304.
inline constexpr std::array<int, 16> kTrn2RoutingIdToIndex = {0, 3, 4, 7, 12, 15, 8, 11,
                                                              1, 2, 5, 6, 13, 14, 9, 10};

// The device index the driver gives the chip with firmware routing id `routingId`
// (neuron_pci_routing_id_to_user_id: the table repeats every 16 ids). inf1 has no routing id:
// the driver counts probes, and the caller passes the probe position.
int driverDeviceIndex(topology::Generation generation, int routingId);

struct SimulatedNeuronFunction {
  std::string bdf;   // "0000:cc:00.0"
  std::string root;  // its PCIe root complex as sysfs names it, "pci0000:b4"
  int routingId = 0;
  int index = 0;  // what the driver numbers it: driverDeviceIndex(generation, routingId)
  int numaNode = 0;
  std::string cpuList;  // local_cpulist, "48-95,144-191"
};

struct SimulatedEfaFunction {
  std::string bdf;
  std::string root;
  int numaNode = 0;
};

struct SimulatedPciLayout {
  // In PCI address order, the order in which the driver probes them.
  std::vector<SimulatedNeuronFunction> neuron;
  std::vector<SimulatedEfaFunction> efa;
  // Where the layout comes from: AWS's published output, or what is assumed.
  std::string source;

  const SimulatedNeuronFunction* functionOfDevice(int index) const;
};

// The layout of `type`. trn2.48xlarge and trn2u.48xlarge: AWS's published trn2n.48xlarge
// neuron-ls (index, BDF, NUMA node and CPU affinity per device). trn1.32xlarge: AWS's published
// lspci (four roots, EFAs at slots 19 and 1a, chips at 1b-1e), with routing ids assumed in
// address order. Every other type: assumed, on the trn1 pattern. Every function is in PCI domain
// `domain` (real instances: 0; a test bed whose nodes share one kernel gives each its own).
SimulatedPciLayout simulatedPciLayout(const topology::InstanceType& type, int domain = 0);

// The driver's load-time line for one function, as the kernel log holds it: v3 prefixes the
// module and function name (pr_fmt, v3/neuron_dhal_v3.c:5), v2 does not; v1 writes none ("").
std::string driverProbeLine(topology::Generation generation, const SimulatedNeuronFunction& f);

// The kernel log as the driver leaves it after loading: one KERN_ERR probe line per device, in
// probe (address) order, as /dev/kmsg records ("3,SEQ,USEC,-;text").
std::string driverLoadLog(const topology::InstanceType& type, const SimulatedPciLayout& layout);

}  // namespace torus::simulator
