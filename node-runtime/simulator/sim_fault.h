// Faults the simulator can put into a tree it wrote, each written the way the real failure shows
// up in the driver's sysfs and /dev, so discovery and health see exactly what they would on a
// broken node.
//
//   device-node-missing:N   /dev/neuronN is gone                 -> neuronN Unhealthy
//   garble:N:ATTR           neuronN/ATTR holds binary junk       -> neuronN Unhealthy, names ATTR
//   ecc:N[:COUNT]           stats/hardware/mem_ecc_uncorrected=COUNT (default 1) -> Unhealthy
//   ecc-repairable:N[:COUNT]
//                           stats/hardware/mem_ecc_repairable_uncorrected=COUNT: an uncorrectable
//                           HBM error awaiting repair (trn2, v3/neuron_dhal_v3.c:1081-1124)
//                                                                -> Unhealthy until a reset
//   probe-fail:N            neuronN failed to probe while the driver loaded: no class device, no
//                           /dev node, no PCI binding, no load line; and since connected_devices
//                           is a table the driver fills only for a full set of devices
//                           (v2/neuron_dhal_v2.c:645-720, v3/neuron_dhal_v3.c:885-940, count
//                           sampled at load, neuron_pci.c:385), every other device lists none
//                                                                -> findings; no topology
//   link-cut:A-B            A and B no longer list each other    -> finding: adjacency differs;
//                           the deep check names the pair. NOT the driver's: connected_devices is
//                           a static table and no single link can vanish from it
//   slow-link:A-B[:FACTOR]  the A-B link trained at 1/FACTOR (default 4) of its maximum speed
//                           (neuronA/neuron_link/neuronB/current_link_speed, both ends)
//                                                                -> the deep check names the pair
//                           NOT the driver's: it has no link speed files (they are Torus's reading
//                           of a driver that might add them, discovery/neuronlink_attributes.h)
//   mem-corrupt:N           neuronN's memory BAR no longer holds what is written through its
//                           write-combining view (resource4_wc stops aliasing resource4), as a
//                           device whose memory lost its contents -> the deep check names neuronN
//   reset-slow:N[:MS]       neuronN's resets take MS (default 3000) -> callers wait or time out
//   reset-fail:N[:MS]       neuronN's resets end INVALID (after MS) -> the chip is not handed out
// The two reset faults act where neuron-sim-driver serves the tree (the local cluster's nodes):
// a plain directory's reset file cannot take time. Removing the file sim_reset.h names undoes
// them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/base/result.h"

namespace torus::simulator {

enum class FaultKind {
  kDeviceNodeMissing,
  kGarbledAttribute,
  kEccUncorrected,
  kEccRepairable,
  kProbeFailed,
  kLinkCut,
  kSlowLink,
  kMemoryCorrupt,
  kResetSlow,
  kResetFail,
};

struct Fault {
  FaultKind kind = FaultKind::kDeviceNodeMissing;
  int device = 0;
  int otherDevice = 0;      // link-cut, slow-link: the far end
  std::string attribute;    // garble: path relative to neuronN, e.g. "core_count"
  std::uint64_t count = 1;  // ecc
  int slowdown = 4;         // slow-link: the link trains at 1/slowdown of its maximum speed
  int resetMillis = -1;     // reset-slow, reset-fail: how long a reset takes (-1: the default)
};

Result<Fault> parseFault(std::string_view text);
std::string describeFault(const Fault& fault);
// Whether the fault writes a state the real driver cannot show (link-cut, slow-link): tools that
// inject one say so.
bool inventedByTheSimulator(const Fault& fault);

// Applies a fault to a tree previously written by writeSimulatedTree under `root`.
Result<void> applyFault(const std::filesystem::path& root, const Fault& fault);

}  // namespace torus::simulator
