// The index -> PCI function map, kept on the node's disk for as long as it holds: the driver
// numbers its devices once, while loading, and says how only in its load lines, which the kernel's
// ring drops in time (minutes on a node whose network logs much). An agent restarted after that
// (an upgrade, a crash) still knows which function each device is from the record the agent
// before it wrote, where the ioctl cannot be asked (a container without /dev/neuronN).
//
// A record holds for one boot (/proc/sys/kernel/random/boot_id) and one set of functions bound to
// the driver; any other record is ignored, so a reboot, a driver reload that rebinds or a changed
// set of chips never reuses a stale map. The file is plain text, one fact a line:
//   boot_id 0e6a...        source kernel log        bound 0000:10:1b.0 0000:10:1c.0 ...
//   neuron0 0000:cc:00.0   (one line per device)
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace torus::discovery {

struct PciMapRecord {
  std::string bootId;
  std::string source;              // where the map came from: "driver ioctl", "kernel log"
  std::vector<std::string> bound;  // the functions bound to the driver, in address order
  std::map<int, std::string> functionOf;
};

// This boot's id; "" when the kernel does not say.
std::string currentBootId();

std::string renderPciMapRecord(const PciMapRecord& record);
// The record in `text`; an error naming the line that is wrong.
Result<PciMapRecord> parsePciMapRecord(std::string_view text);

// Writes `record` to `file` (its directory made when missing), replacing it whole, so a reader
// never sees half a record.
Result<void> writePciMapRecord(const std::filesystem::path& file, const PciMapRecord& record);
// The record at `file` when it was written in this boot for the same bound functions; nullopt
// otherwise (no file, another boot, other functions), and a file that cannot be parsed is
// logged and ignored.
std::optional<PciMapRecord> readPciMapRecord(const std::filesystem::path& file,
                                             const std::string& bootId,
                                             const std::vector<std::string>& bound);

}  // namespace torus::discovery
