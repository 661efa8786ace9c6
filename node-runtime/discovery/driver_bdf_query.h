// The driver's own answer to "which PCI function is neuronN": NEURON_IOCTL_DEVICE_BDF_EXT
// (aws-neuron-driver 2.24.7.0, neuron_ioctl.h:442-448,729; neuron_cdev.c:1477-1513).
//
// The query goes through a write-only open of one device node, the driver's "free access" mode
// (neuron_cdev.c:50,2822-2825): it neither counts as a holder of the device nor blocks a sysfs
// reset, so asking never disturbs a tenant. The index asked for is relative to the device opened.
// The driver adds the two and hands the sum, truncated to 8 bits, to a BUG_ON(>= 64)
// (neuron_pci.c:65-68): an index that is not a device oopses the kernel, so callers ask only for
// indices the driver's class directory lists, and this refuses any outside [0, 63].
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace torus::discovery {

// The ioctl's argument, laid out as the driver's struct neuron_ioctl_device_bdf_ext.
struct DeviceBdfExt {
  std::uint32_t ndIndex = 0;  // [in] relative to the device the fd is open on
  std::uint32_t domain = 0;   // [out]
  std::uint32_t bus = 0;      // [out]
  std::uint8_t slot = 0;      // [out]
  std::uint8_t function = 0;  // [out]
};

// The ioctl's number: _IOR('N', 106, struct neuron_ioctl_device_bdf_ext *). The driver sizes it
// by the pointer, not the struct, and the number must match bit for bit.
unsigned long deviceBdfExtRequest();

// "DDDD:BB:SS.F" from the driver's answer.
std::string bdfText(const DeviceBdfExt& answer);

// Asks the driver, through `deviceNode` (the node of device `openedIndex`), for the PCI function
// of each of `indices`. An error when the node cannot be opened write-only or the driver does not
// answer the ioctl (ENOTTY: not the Neuron driver's node); an index it refuses is left out.
Result<std::map<int, std::string>> queryDriverBdfs(const std::filesystem::path& deviceNode,
                                                   int openedIndex,
                                                   const std::vector<int>& indices);

}  // namespace torus::discovery
