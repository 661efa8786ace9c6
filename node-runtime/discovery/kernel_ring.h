// The kernel log as it stands now, read once: for what the driver wrote while loading (its
// index -> PCI function lines, pci_functions.h), which precedes any agent.
//
// A regular file (a simulated node's log) is read whole; /dev/kmsg is read record by record from
// the ring's oldest until nothing is left; where opening it is refused (a container's device
// rules refuse kmsg, 1:11, as on any real node) the ring comes through syslog(2), which needs
// CAP_SYSLOG. Lines the ring has already dropped are gone either way.
#pragma once

#include <filesystem>
#include <string>

#include "common/base/result.h"

namespace torus::discovery {

// The whole ring buffer as syslog(2) formats it ("<6>[  12.345678] message" per line).
Result<std::string> readKernelRing();

// The log at `path` (a file or /dev/kmsg), or the ring through syslog(2) when opening `path` is
// refused: lines separated by '\n', each in its source's own format.
Result<std::string> readKernelLogOnce(const std::filesystem::path& path);

}  // namespace torus::discovery
