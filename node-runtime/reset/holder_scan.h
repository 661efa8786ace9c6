// Which processes hold a Neuron device open, as the driver counts them: it ignores a reset while
// any process has the device open other than write-only (aws-neuron-driver neuron_cdev.c:50,
// 2822-2830,2985). A device is known by what the kernel knows it by, its device number
// (st_rdev), not by the name a process opened: a container may reach the host's /dev/neuron5 as
// /dev/neuron0, or through a node it made itself, and the link text in /proc/PID/fd is the name in
// the process's own mount namespace.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/topology/node.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::reset {

struct DeviceHolder {
  int pid = 0;
  std::string command;
};

struct HolderScan {
  // By device node as asked for; nodes nobody was seen holding are absent.
  std::map<std::string, std::vector<DeviceHolder>> holders;
  // Processes whose open files could not be read (another process's /proc/PID/fd needs
  // CAP_SYS_PTRACE over it, and CAP_DAC_READ_SEARCH when it runs as another user): any of them
  // may hold any of the devices, so nothing can be called free while this is not empty.
  std::vector<DeviceHolder> unseen;
};

// Processes that have these device nodes open, in one pass over /proc (which costs about a
// millisecond on a busy node). A descriptor matches a node when it is the same character device
// (st_rdev), or for a node that is not one, the same file; a node that cannot be stat'ed matches
// by name. Processes that exit during the scan are skipped.
HolderScan findHoldersOfAny(const std::string& procRoot,
                            const std::vector<std::string>& deviceNodes);

// What `scan.unseen` means, for errors and logs: "the open files of pid 12 (python) and 3 more
// processes are unreadable (...)".
std::string unseenText(const HolderScan& scan);

// "pid 12 (python), pid 40 (nrt)".
std::string holdersText(const std::vector<DeviceHolder>& holders);

// The devices of `node` some process has open, in one pass over /proc; every device when some
// process's open files could not be read (said once in the log).
topology::DeviceSet openDevices(const discovery::DiscoveryRoots& roots, const topology::Node& node,
                                const std::string& procRoot = "/proc");

}  // namespace torus::reset
