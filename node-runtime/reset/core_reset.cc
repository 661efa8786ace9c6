#include "node-runtime/reset/core_reset.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <optional>
#include <system_error>
#include <thread>

#include <fcntl.h>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "node-runtime/discovery/sysfs_attribute.h"

namespace torus::reset {
namespace {

namespace fs = std::filesystem;

std::string holdersText(const std::vector<DeviceHolder>& holders) {
  std::vector<std::string> items;
  for (const DeviceHolder& holder : holders) {
    items.push_back("pid " + std::to_string(holder.pid) + " (" + holder.command + ")");
  }
  return joinStrings(items, ", ");
}

// Whether the descriptor `fd` of a process was opened write-only, from its fdinfo "flags:" line
// (octal). The driver does not count such an open as a holder: it is its "free access" mode,
// which never blocks a reset (aws-neuron-driver neuron_cdev.c:50,2822-2825). When the flags
// cannot be read the open counts as a holder.
bool openedWriteOnly(const fs::path& process, const fs::path& fd) {
  auto info = readSmallFile(process / "fdinfo" / fd.filename(), 4096);
  if (!info) return false;
  for (const std::string_view line : splitAndTrim(*info, '\n')) {
    if (!line.starts_with("flags:")) continue;
    unsigned long flags = 0;
    for (const char c : trim(line.substr(6))) {
      if (c < '0' || c > '7') return false;
      flags = flags * 8 + static_cast<unsigned long>(c - '0');
    }
    return (flags & O_ACCMODE) == O_WRONLY;
  }
  return false;
}

}  // namespace

HolderScan findHoldersOfAny(const std::string& procRoot,
                            const std::vector<std::string>& deviceNodes) {
  // A link matches the path as given or as resolved (a /dev symlink, a simulated tree).
  std::map<fs::path, std::string> wanted;
  for (const std::string& node : deviceNodes) {
    std::error_code canonicalError;
    wanted.emplace(fs::path(node), node);
    wanted.emplace(fs::weakly_canonical(node, canonicalError), node);
  }
  HolderScan scan;
  std::error_code ec;
  for (const fs::directory_entry& process : fs::directory_iterator(procRoot, ec)) {
    const std::string name = process.path().filename().string();
    auto pid = parseInt(name, 1, 1 << 30);
    if (!pid || std::to_string(*pid) != name) continue;
    const auto commandOf = [&process] {
      auto command = readSmallFile(process.path() / "comm", 256);
      return command ? std::string(trim(*command)) : std::string("?");
    };
    // Listing a process's fd directory is allowed to its uid (or CAP_DAC_READ_SEARCH); reading
    // each link needs CAP_SYS_PTRACE over the process (the kernel's ptrace access check).
    const auto refused = [](const std::error_code& error) {
      return error == std::errc::permission_denied || error == std::errc::operation_not_permitted;
    };
    std::error_code fdError;
    std::vector<std::string> held;  // by this process, each once
    fs::directory_iterator fds(process.path() / "fd", fdError);
    bool unreadable = refused(fdError);
    for (const fs::directory_entry& fd : fds) {
      if (unreadable) break;
      std::error_code linkError;
      const fs::path link = fs::read_symlink(fd.path(), linkError);
      if (refused(linkError)) unreadable = true;
      if (linkError) continue;
      const auto found = wanted.find(link);
      if (found != wanted.end() &&
          std::find(held.begin(), held.end(), found->second) == held.end() &&
          !openedWriteOnly(process.path(), fd.path())) {
        held.push_back(found->second);
      }
    }
    if (unreadable) {
      scan.unseen.push_back({*pid, commandOf()});
      continue;
    }
    if (held.empty()) continue;
    const std::string command = commandOf();
    for (const std::string& node : held) {
      scan.holders[node].push_back({*pid, command});
    }
  }
  return scan;
}

std::string unseenText(const HolderScan& scan) {
  if (scan.unseen.empty()) return "";
  const DeviceHolder& first = scan.unseen.front();
  std::string text =
      "the open files of pid " + std::to_string(first.pid) + " (" + first.command + ")";
  if (scan.unseen.size() > 1) {
    text += " and " + std::to_string(scan.unseen.size() - 1) + " more processes";
  }
  return text +
         " are unreadable (reading another process's /proc/PID/fd needs CAP_SYS_PTRACE, "
         "which the chart grants the agent)";
}

topology::DeviceSet openDevices(const discovery::DiscoveryRoots& roots, const topology::Node& node,
                                const std::string& procRoot) {
  std::vector<std::string> nodes;
  for (const topology::Device& device : node.devices)
    nodes.push_back(roots.deviceNode(device.index).string());
  const HolderScan scan = findHoldersOfAny(procRoot, nodes);
  topology::DeviceSet open;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!scan.unseen.empty() || scan.holders.contains(nodes[i])) {
      open.insert(node.devices[i].index);
    }
  }
  static std::atomic<bool> warned{false};
  if (!scan.unseen.empty() && !warned.exchange(true)) {
    TORUS_LOG(Warn, Runtime,
              "cannot see which processes hold Neuron devices; every device counts as in use for "
              "recovery and the deep check",
              {"why", unseenText(scan)});
  }
  return open;
}

namespace {

// Starts the resets of `devices` together, then waits for the driver to report each ready again:
// a reset takes the driver a while (seconds on some devices), and a 16-device container should
// wait for one, not sixteen in a row. Every reset started is waited for, so a failure names every
// device that failed and none is left mid-reset by an early return.
Result<void> resetAndWait(const discovery::DiscoveryRoots& roots, const std::vector<int>& devices,
                          const ResetPolicy& policy) {
  std::vector<int> started;
  std::optional<Error> firstError;
  for (const int device : devices) {
    if (auto written = discovery::writeAttribute(roots.resetFile(device), "1\n"); !written) {
      firstError =
          std::move(written).error().withContext("resetting neuron" + std::to_string(device));
      break;
    }
    started.push_back(device);
  }
  const auto deadline = std::chrono::steady_clock::now() + policy.readyTimeout;
  std::vector<std::string> invalid;
  std::vector<int> pending = started;
  while (!pending.empty()) {
    std::vector<int> stillResetting;
    for (const int device : pending) {
      const std::string name = "neuron" + std::to_string(device);
      auto state =
          discovery::readParsed(roots.resetFile(device), "reset", discovery::parseResetState);
      if (!state) {
        if (!firstError) firstError = std::move(state).error().withContext("resetting " + name);
        continue;
      }
      if (*state == 2) invalid.push_back(name);
      if (*state == 0) stillResetting.push_back(device);
    }
    pending = std::move(stillResetting);
    if (pending.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::vector<std::string> names;
      for (const int device : pending)
        names.push_back("neuron" + std::to_string(device));
      return makeError(ErrorCode::kDeadlineExceeded,
                       "resetting " + joinStrings(names, ", ") + ": still in reset after " +
                           std::to_string(policy.readyTimeout.count()) + " ms" +
                           policy.whenStillResetting);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!invalid.empty()) {
    return makeError(ErrorCode::kInternal, "resetting " + joinStrings(invalid, ", ") +
                                               ": the driver reports state INVALID (2)");
  }
  if (firstError) return std::move(*firstError);
  return okResult();
}

}  // namespace

std::chrono::milliseconds driverResetLimit(const topology::InstanceType* type) {
  if (type != nullptr && type->generation != topology::Generation::kTrn2) {
    return std::chrono::seconds(120);
  }
  return std::chrono::seconds(480);
}

Result<void> resetDevice(const discovery::DiscoveryRoots& roots, int device,
                         const ResetPolicy& policy) {
  topology::DeviceSet one;
  one.insert(device);
  return resetDevices(roots, one, policy);
}

Result<void> resetDevices(const discovery::DiscoveryRoots& roots,
                          const topology::DeviceSet& devices, const ResetPolicy& policy) {
  std::vector<int> pending = devices.ids();
  for (int attempt = 1; !pending.empty(); ++attempt) {
    std::vector<std::string> nodes;
    for (const int device : pending)
      nodes.push_back(roots.deviceNode(device).string());
    const HolderScan scan = findHoldersOfAny(policy.procRoot, nodes);
    if (!scan.unseen.empty()) {
      return makeError(ErrorCode::kPermissionDenied,
                       "resetting neuron" + std::to_string(pending.front()) +
                           ": cannot tell whether a process holds it: " + unseenText(scan) +
                           "; the driver ignores a reset while the device is open, so none was "
                           "written");
    }
    std::vector<int> stillHeld;
    std::vector<int> free;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      const auto held = scan.holders.find(nodes[i]);
      if (held == scan.holders.end()) {
        free.push_back(pending[i]);
        continue;
      }
      const std::string name = "neuron" + std::to_string(pending[i]);
      if (attempt >= policy.attempts) {
        return makeError(ErrorCode::kFailedPrecondition,
                         "resetting " + name + ": " + nodes[i] + " is still open by " +
                             holdersText(held->second) + " after " + std::to_string(attempt) +
                             " attempts; the driver refuses a reset while the device is open");
      }
      TORUS_LOG(Debug, Runtime, "device open; reset deferred", {"device", pending[i]},
                {"holders", holdersText(held->second)}, {"attempt", attempt});
      stillHeld.push_back(pending[i]);
    }
    if (auto reset = resetAndWait(roots, free, policy); !reset) return reset;
    pending = std::move(stillHeld);
    if (!pending.empty()) std::this_thread::sleep_for(policy.retryDelay);
  }
  return okResult();
}

}  // namespace torus::reset
