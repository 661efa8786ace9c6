// Device reset with the Neuron driver's semantics: writing neuronN/reset resets every core of the
// device, but the driver silently ignores the write while any process has the device open, and
// the reset itself runs asynchronously (reset reads 0 while it runs, then 1 READY or 2 INVALID).
// So: find who holds the device (/proc/*/fd), retry a bounded number of times while someone does,
// write, then wait for READY — and fail with an error naming the holder, the device or the state.
// A scan that cannot read every process's open files refuses the reset: a write the driver
// ignores would hand a device with the last tenant's state to the next.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/topology/instance_catalog.h"
#include "common/topology/node.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::reset {

// How long the driver may take to start a reset it accepted: it keeps trying for up to 120 s on
// inf1, trn1 and inf2 and 480 s on trn2 (aws-neuron-driver v1/neuron_dhal_v1.c:21,
// v2/neuron_dhal_v2.c:28, v3/neuron_dhal_v3.c:34), then resets. A type the catalog does not
// know waits as long as the longest.
std::chrono::milliseconds driverResetLimit(const topology::InstanceType* type);

struct ResetPolicy {
  int attempts = 5;  // tries while the device is held open
  std::chrono::milliseconds retryDelay{200};
  // For the driver's asynchronous reset to finish: its limit on the node's generation where
  // nothing waits on the caller (recovery), less where a caller has a deadline of its own.
  std::chrono::milliseconds readyTimeout = driverResetLimit(nullptr);
  // Said in the error when readyTimeout runs out while the driver may still be resetting.
  std::string whenStillResetting;
  std::string procRoot = "/proc";
};

struct DeviceHolder {
  int pid = 0;
  std::string command;
};

struct HolderScan {
  // By device node; nodes nobody was seen holding are absent.
  std::map<std::string, std::vector<DeviceHolder>> holders;
  // Processes whose open files could not be read (another process's /proc/PID/fd needs
  // CAP_SYS_PTRACE over it, and CAP_DAC_READ_SEARCH when it runs as another user): any of them
  // may hold any of the devices, so nothing can be called free while this is not empty.
  std::vector<DeviceHolder> unseen;
};

// Processes that have these device nodes open, in one pass over /proc (which costs about a
// millisecond on a busy node). Processes that exit during the scan are skipped.
HolderScan findHoldersOfAny(const std::string& procRoot,
                            const std::vector<std::string>& deviceNodes);

// What `scan.unseen` means, for errors and logs: "the open files of pid 12 (python) and 3 more
// processes are unreadable (...)".
std::string unseenText(const HolderScan& scan);

// The devices of `node` some process has open, in one pass over /proc; every device when some
// process's open files could not be read (said once in the log).
topology::DeviceSet openDevices(const discovery::DiscoveryRoots& roots, const topology::Node& node,
                                const std::string& procRoot = "/proc");

Result<void> resetDevice(const discovery::DiscoveryRoots& roots, int device,
                         const ResetPolicy& policy);
// Resets the devices, looking for holders of all of them in one pass; a held device is retried
// as resetDevice does. The resets of the free devices run together (one reset's time, not one
// per device); a failure names every device whose reset failed.
Result<void> resetDevices(const discovery::DiscoveryRoots& roots,
                          const topology::DeviceSet& devices, const ResetPolicy& policy);

}  // namespace torus::reset
