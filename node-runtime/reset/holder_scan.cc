#include "node-runtime/reset/holder_scan.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <optional>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/strings.h"

namespace torus::reset {
namespace {

namespace fs = std::filesystem;

// What a device node is to the kernel: a character device by its number; anything else (a
// test's plain file) by its file.
struct NodeIdentity {
  bool character = false;
  dev_t rdev = 0;
  dev_t dev = 0;
  ino_t ino = 0;

  static std::optional<NodeIdentity> of(const struct stat& st) {
    if (S_ISCHR(st.st_mode)) return NodeIdentity{true, st.st_rdev, 0, 0};
    return NodeIdentity{false, 0, st.st_dev, st.st_ino};
  }
  bool operator==(const NodeIdentity&) const = default;
};

struct WantedNode {
  std::string name;
  std::optional<NodeIdentity> identity;  // none: the node cannot be stat'ed; matched by name
  fs::path canonical;
};

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

bool refused(const std::error_code& error) {
  return error == std::errc::permission_denied || error == std::errc::operation_not_permitted;
}

// The wanted node the descriptor at `fd` (whose link reads `link`) is, if any. Sockets, pipes
// and anonymous inodes link to text that is not a path and are never a device node.
const WantedNode* matchDescriptor(const std::vector<WantedNode>& wanted, const fs::path& fd,
                                  const fs::path& link) {
  if (!link.is_absolute()) return nullptr;
  struct stat st {};
  // stat through /proc/PID/fd/N reaches the open file itself, whatever its name. Reading the link
  // already passed the access check on the process, so a failure here is the file's own: closed
  // since, or on a mount that refuses even root (FUSE without allow_other). A device node is
  // neither, so only its name is left to go by.
  if (::stat(fd.c_str(), &st) != 0) {
    for (const WantedNode& node : wanted) {
      if (!node.identity && (link == node.name || link == node.canonical)) return &node;
    }
    return nullptr;
  }
  const std::optional<NodeIdentity> identity = NodeIdentity::of(st);
  for (const WantedNode& node : wanted) {
    if (node.identity ? node.identity == identity : (link == node.name || link == node.canonical))
      return &node;
  }
  return nullptr;
}

}  // namespace

std::string holdersText(const std::vector<DeviceHolder>& holders) {
  std::vector<std::string> items;
  for (const DeviceHolder& holder : holders) {
    items.push_back("pid " + std::to_string(holder.pid) + " (" + holder.command + ")");
  }
  return joinStrings(items, ", ");
}

HolderScan findHoldersOfAny(const std::string& procRoot,
                            const std::vector<std::string>& deviceNodes) {
  std::vector<WantedNode> wanted;
  for (const std::string& node : deviceNodes) {
    WantedNode entry{node, std::nullopt, {}};
    std::error_code canonicalError;
    entry.canonical = fs::weakly_canonical(node, canonicalError);
    if (struct stat st{}; ::stat(node.c_str(), &st) == 0) entry.identity = NodeIdentity::of(st);
    wanted.push_back(std::move(entry));
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
      const WantedNode* found = matchDescriptor(wanted, fd.path(), link);
      if (found != nullptr && std::find(held.begin(), held.end(), found->name) == held.end() &&
          !openedWriteOnly(process.path(), fd.path())) {
        held.push_back(found->name);
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

}  // namespace torus::reset
