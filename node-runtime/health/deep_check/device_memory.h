// Device memory as the host reaches it, for the deep check's memory pattern test.
//
// A Neuron device's memory is its PCI function's memory BAR (BAR 4), and the kernel offers every
// PCI memory BAR to root through generic sysfs files, whichever driver is bound:
// <function>/resource4 (uncached) and, for a prefetchable BAR, <function>/resource4_wc
// (write-combining). The test writes each pattern through resource4_wc, the fast path for bulk
// writes, and reads it back through resource4, so what it verifies is what the device holds, not
// what a CPU write buffer still has. The window sits at the top of the BAR, away from the start
// where the driver keeps its own structures, and only idle devices are tested.
//
// Owns: finding the files of one device and its mappings while a test runs. Does not own: the
// patterns (memory_pattern.h) or which devices are idle (deep_check.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/base/result.h"
#include "common/topology/node.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::health {

inline constexpr int kDeviceMemoryBar = 4;

struct DeviceMemoryFiles {
  std::filesystem::path function;        // /sys/bus/pci/devices/<bdf>
  std::filesystem::path uncached;        // <function>/resource4: read back through this
  std::filesystem::path writeCombining;  // <function>/resource4_wc: patterns written through this
};

// The memory BAR files of the PCI function `pciBdf`: the one discovery found for the device
// (discovery/pci_functions.h), never a guess.
DeviceMemoryFiles deviceMemoryFiles(const discovery::DiscoveryRoots& roots,
                                    const std::string& pciBdf);

struct MemoryTestResult {
  bool passed = false;
  // false: the test could not write the BAR at all (a read-only /sys, as the chart mounts it, or
  // no permission): nothing is known about the memory, and `problem` says why it was not tested.
  bool tested = true;
  std::string problem;  // names the file, window, pattern, offset and the values on failure
  std::uint64_t windowOffset = 0;
  std::uint64_t windowBytes = 0;
  double seconds = 0;
};

// Writes and verifies every pattern over `windowBytes` (rounded down to whole pages, at most the
// BAR) at the top of the device's memory BAR. A device without a known PCI function is not
// tested.
MemoryTestResult testDeviceMemory(const discovery::DiscoveryRoots& roots,
                                  const topology::Device& device, std::uint64_t windowBytes);

}  // namespace torus::health
