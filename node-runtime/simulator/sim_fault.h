// Faults the simulator can put into a tree it wrote, each written the way the real failure shows
// up in the driver's sysfs and /dev, so discovery and health see exactly what they would on a
// broken node.
//
//   device-node-missing:N   /dev/neuronN is gone                 -> neuronN Unhealthy
//   garble:N:ATTR           neuronN/ATTR holds binary junk       -> neuronN Unhealthy, names ATTR
//   ecc:N[:COUNT]           stats/hardware/mem_ecc_uncorrected=COUNT (default 1) -> Unhealthy
//   link-cut:A-B            A and B no longer list each other    -> finding: adjacency differs
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/base/result.h"

namespace torus::simulator {

enum class FaultKind { kDeviceNodeMissing, kGarbledAttribute, kEccUncorrected, kLinkCut };

struct Fault {
  FaultKind kind = FaultKind::kDeviceNodeMissing;
  int device = 0;
  int otherDevice = 0;      // link-cut: the far end
  std::string attribute;    // garble: path relative to neuronN, e.g. "core_count"
  std::uint64_t count = 1;  // ecc
};

Result<Fault> parseFault(std::string_view text);
std::string describeFault(const Fault& fault);

// Applies a fault to a tree previously written by writeSimulatedTree under `root`.
Result<void> applyFault(const std::filesystem::path& root, const Fault& fault);

}  // namespace torus::simulator
