#include "node-runtime/agent/debug_report.h"

#include <algorithm>
#include <cstdio>
#include <system_error>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/base/file_io.h"
#include "common/base/strings.h"
#include "common/base/utc_time.h"
#include "common/contracts/agent_debug_report.h"

namespace torus::agent {
namespace {

namespace fs = std::filesystem;
namespace key = contracts::debug_report;
using nlohmann::json;

// What the PCI function says about the link and its errors (the kernel's names). Its other files
// are config space and memory BARs: large, binary, and mapping one can hang a bad device.
constexpr const char* kPciAttributes[] = {"vendor",
                                          "device",
                                          "subsystem_vendor",
                                          "subsystem_device",
                                          "class",
                                          "revision",
                                          "numa_node",
                                          "local_cpulist",
                                          "current_link_speed",
                                          "current_link_width",
                                          "max_link_speed",
                                          "max_link_width",
                                          "aer_dev_correctable",
                                          "aer_dev_fatal",
                                          "aer_dev_nonfatal",
                                          "enable",
                                          "power_state",
                                          "reset_method"};

struct Walk {
  const DriverFileLimits& limits;
  json files = json::object();
  json links = json::object();
  json unread = json::object();
  std::size_t count = 0;
  std::size_t bytes = 0;
  bool truncated = false;

  void file(const fs::path& path, const std::string& name) {
    if (count >= limits.maxFiles || bytes >= limits.maxTotalBytes) {
      truncated = true;
      return;
    }
    // A sysfs attribute is never long: one that is is named with its size, not read whole.
    const auto data = readSmallFile(path, limits.maxFileBytes);
    if (!data) {
      unread[name] = data.error().message;
      return;
    }
    ++count;
    bytes += data->size();
    files[name] = escapeUnprintable(*data);
  }

  void directory(const fs::path& dir, const std::string& prefix, int depth) {
    std::error_code error;
    std::vector<fs::directory_entry> entries;
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error))
      entries.push_back(*it);
    if (error) {
      unread[prefix.empty() ? "." : prefix] = error.message();
      return;
    }
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.path() < b.path(); });
    for (const fs::directory_entry& entry : entries) {
      const std::string name = prefix + entry.path().filename().string();
      if (entry.is_symlink(error)) {
        // sysfs links lead back up the tree (device, subsystem): named, never followed.
        links[name] = fs::read_symlink(entry.path(), error).string();
        continue;
      }
      if (entry.is_directory(error)) {
        if (depth < limits.maxDepth) directory(entry.path(), name + "/", depth + 1);
        continue;
      }
      if (!entry.is_regular_file(error)) continue;
      // Write-only attributes (reset) answer a read with an error or, on some drivers, act.
      struct stat info {};
      if (::stat(entry.path().c_str(), &info) != 0 || (info.st_mode & 0444) == 0) continue;
      file(entry.path(), name);
    }
  }
};

json deviceNodeOf(const discovery::DiscoveryRoots& roots, int index) {
  const fs::path path = roots.deviceNode(index);
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return {{"path", path.string()},
            {"error", std::error_code(errno, std::generic_category()).message()}};
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", info.st_mode & 07777);
  json node = {{"path", path.string()}, {"mode", mode}};
  if (S_ISCHR(info.st_mode)) {
    node["type"] = "character device";
    node["major"] = major(info.st_rdev);
    node["minor"] = minor(info.st_rdev);
  } else {
    node["type"] = "not a character device";
  }
  return node;
}

json healthOf(const topology::DeviceHealth& health) {
  json problems = json::array();
  for (const topology::HealthProblem& problem : health.problems) {
    problems.push_back({{"dimension", std::string(topology::dimensionName(problem.dimension))},
                        {"code", problem.code},
                        {"text", problem.text}});
  }
  return {{"state", std::string(topology::stateName(health.state()))},
          {"reason", health.reason},
          {"problems", std::move(problems)},
          {"unmonitored", health.unmonitored},
          {"recoveredWith", health.recoveredWith}};
}

}  // namespace

void RecentKernelLines::add(int device, std::string type, std::string text) {
  std::lock_guard lock(mutex_);
  lines_.push_back({std::chrono::system_clock::now(), device, std::move(type), std::move(text)});
  while (lines_.size() > kMaxLines)
    lines_.pop_front();
}

std::vector<RecentKernelLines::Line> RecentKernelLines::lines() const {
  std::lock_guard lock(mutex_);
  return {lines_.begin(), lines_.end()};
}

json driverFilesOf(const discovery::DiscoveryRoots& roots, const topology::Device& device,
                   const DriverFileLimits& limits) {
  Walk walk{limits};
  std::error_code error;
  // The class entry is a link to the device's directory; read what it points at.
  const fs::path classDir = fs::canonical(roots.deviceDir(device.index), error);
  json out = {{key::kDriverDirectory, roots.deviceDir(device.index).string()}};
  if (error) {
    out["error"] = "cannot resolve the device's sysfs directory: " + error.message();
  } else {
    walk.directory(classDir, "", 0);
  }
  json pci = json::object();
  if (!device.pciBdf.empty()) {
    const fs::path function = roots.sys / "bus" / "pci" / "devices" / device.pciBdf;
    out["pciFunction"] = function.string();
    for (const char* attribute : kPciAttributes) {
      if (const auto data = readSmallFile(function / attribute, limits.maxFileBytes))
        pci[attribute] = escapeUnprintable(*data);
    }
  }
  out[key::kDriverFiles] = std::move(walk.files);
  out["links"] = std::move(walk.links);
  out["unreadable"] = std::move(walk.unread);
  out["truncated"] = walk.truncated;
  out["pciAttributes"] = std::move(pci);
  out["deviceNode"] = deviceNodeOf(roots, device.index);
  return out;
}

json allocationsDocument(const std::vector<PluginHolder>& holders,
                         const std::vector<PreparedClaimView>& claims) {
  json held = json::array();
  for (const PluginHolder& holder : holders) {
    held.push_back({{key::kHolderPod, holder.pod},
                    {key::kHolderContainer, holder.container},
                    {"resource", holder.resource},
                    {"ids", holder.ids.ids()},
                    {key::kHeldCores, holder.cores.ids()},
                    {key::kHeldDevices, holder.devices.ids()}});
  }
  json prepared = json::array();
  for (const PreparedClaimView& claim : claims) {
    json users = json::array();
    for (const ClaimUser& user : claim.containers)
      users.push_back({{key::kClaimUserPod, user.pod}, {"container", user.container}});
    prepared.push_back({{key::kClaimName, claim.claim},
                        {"uid", claim.uid},
                        {"driver", claim.driver},
                        {"deviceNames", claim.deviceNames},
                        {key::kHeldCores, claim.cores.ids()},
                        {key::kHeldDevices, claim.devices.ids()},
                        {"lnc", claim.lnc},
                        {key::kClaimContainers, std::move(users)}});
  }
  return {{key::kHolders, std::move(held)}, {key::kClaims, std::move(prepared)}};
}

Result<json> debugReport(const DebugReportInput& input) {
  const topology::Node& node = input.node;
  if (input.device && (*input.device < 0 || *input.device >= node.deviceCount())) {
    return makeError(ErrorCode::kNotFound, "device " + std::to_string(*input.device) +
                                               " is not on this node (it has " +
                                               std::to_string(node.deviceCount()) + " devices: 0-" +
                                               std::to_string(node.deviceCount() - 1) + ")");
  }
  const auto wanted = [&](int index) { return !input.device || *input.device == index; };
  json devices = json::array();
  for (const topology::Device& device : node.devices) {
    if (!wanted(device.index)) continue;
    json entry = {{key::kDeviceIndex, device.index},
                  {"health", healthOf(device.health)},
                  {"serialNumber", device.serialNumber},
                  {"pciBusID", device.pciBdf},
                  {"pcieRoot", device.pcieRoot},
                  {"connected", device.connected},
                  {"awaitingRecovery", input.awaitingRecovery.contains(device.index)}};
    if (device.numaNode) entry["numaNode"] = *device.numaNode;
    const auto slot = static_cast<std::size_t>(device.index);
    entry[key::kDeviceDriver] =
        slot < input.driverFiles.size() ? input.driverFiles[slot] : json(nullptr);
    devices.push_back(std::move(entry));
  }
  json lines = json::array();
  for (const RecentKernelLines::Line& line : input.kernelLines) {
    if (!wanted(line.device)) continue;
    // syslog(2) hands on the kernel's raw bytes (kmsg escapes them): a line is shown as the files
    // are, or one byte that is not UTF-8 would make the whole report unrenderable.
    lines.push_back({{key::kLineSeenAt, utcRfc3339(line.seenAt)},
                     {key::kLineDevice, line.device},
                     {key::kLineType, escapeUnprintable(line.type)},
                     {key::kLineText, escapeUnprintable(line.text)}});
  }
  json report = {
      {"kind", key::kKind},
      {"agentVersion", input.agentVersion},
      {"collectedAt", utcRfc3339(std::chrono::system_clock::now())},
      {"nodeName", input.nodeName},
      {"node",
       {{"instanceType", node.instanceType},
        {"lnc", node.lnc},
        {"deviceCount", node.deviceCount()},
        {"pendingLnc", input.pendingLnc ? json(*input.pendingLnc) : json(nullptr)}}},
      {key::kDevices, std::move(devices)},
      {key::kKernelLog,
       {{key::kKernelLogSource, input.kernelLogSource},
        {"lost", input.kernelLogLost},
        {"note", "the Neuron hardware-error lines the agent read since it started, newest " +
                     std::to_string(RecentKernelLines::kMaxLines) + " at most"},
        {key::kKernelLogLines, std::move(lines)}}},
      {"stalledReads", input.stalledReads},
      {key::kAllocations, input.allocations},
      {key::kMetrics, input.metrics}};
  if (input.device) report["device"] = *input.device;
  return report;
}

}  // namespace torus::agent
