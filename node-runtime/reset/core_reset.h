// Device reset with the Neuron driver's semantics: writing neuronN/reset resets every core of the
// device, but the driver silently ignores the write while any process has the device open, and
// the reset itself runs asynchronously (reset reads 0 while it runs, then 1 READY or 2 INVALID).
// So: find who holds the device (holder_scan.h), retry a bounded number of times while someone
// does, write, then wait for READY — and fail with an error naming the holder, the device or the
// state. A scan that cannot read every process's open files refuses the reset: a write the driver
// ignores would hand a device with the last tenant's state to the next. And since a process may
// open the device between the scan and the write, a reset counts as done only when the driver
// shows it took it: the state read RESET (0), or the cores' reset_req_count rose; one it
// ignored is tried again after a new scan, and reported as not done when the tries run out.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/base/result.h"
#include "common/topology/instance_catalog.h"
#include "common/topology/node.h"
#include "node-runtime/discovery/discovery_roots.h"
#include "node-runtime/reset/holder_scan.h"

namespace torus::reset {

// How long the driver may take to start a reset it accepted: it keeps trying for up to 120 s on
// inf1, trn1 and inf2 and 480 s on trn2 (aws-neuron-driver v1/neuron_dhal_v1.c:21,
// v2/neuron_dhal_v2.c:28, v3/neuron_dhal_v3.c:34), then resets. A type the catalog does not
// know waits as long as the longest.
std::chrono::milliseconds driverResetLimit(const topology::InstanceType* type);

struct ResetPolicy {
  int attempts = 5;  // tries while the device is held open, or its reset was ignored
  std::chrono::milliseconds retryDelay{200};
  // For the driver's asynchronous reset to finish: its limit on the node's generation where
  // nothing waits on the caller (recovery), less where a caller has a deadline of its own.
  std::chrono::milliseconds readyTimeout = driverResetLimit(nullptr);
  // Said in the error when readyTimeout runs out while the driver may still be resetting.
  std::string whenStillResetting;
  std::string procRoot = "/proc";
};

Result<void> resetDevice(const discovery::DiscoveryRoots& roots, int device,
                         const ResetPolicy& policy);
// The requests the driver has counted for a reset of `device`: the sum over its cores of
// neuron_coreM/stats/other_info/reset_req_count/total (aws-neuron-driver neuron_reset.c:270-279,
// neuron_sysfs_metrics.c:133,696-706). None when a core's counter cannot be read.
std::optional<std::uint64_t> resetRequestCount(const discovery::DiscoveryRoots& roots, int device);

// Resets the devices, looking for holders of all of them in one pass; a held device is retried
// as resetDevice does. The resets of the free devices run together (one reset's time, not one
// per device); a failure names every device whose reset failed.
Result<void> resetDevices(const discovery::DiscoveryRoots& roots,
                          const topology::DeviceSet& devices, const ResetPolicy& policy);

}  // namespace torus::reset
