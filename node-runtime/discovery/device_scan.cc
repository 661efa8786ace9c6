#include "node-runtime/discovery/device_scan.h"

#include <algorithm>
#include <system_error>

#include <sys/stat.h>

#include "common/base/parse.h"
#include "node-runtime/discovery/pci_functions.h"
#include "node-runtime/discovery/sysfs_attribute.h"

namespace torus::discovery {
namespace {

namespace fs = std::filesystem;

// ECC counters that mean the device can no longer be trusted with a workload. Missing files are
// fine: inf1 (v1 driver) has no stats/hardware directory. On trn2 an uncorrectable HBM error
// that awaits repair counts only in mem_ecc_repairable_uncorrected; mem_ecc_uncorrected counts
// it once the repair failed (v3/neuron_dhal_v3.c:1081-1124). A reset repairs it, and until then
// the device stays out of service.
constexpr const char* kUncorrectedCounters[] = {"mem_ecc_uncorrected", "sram_ecc_uncorrected",
                                                "mem_ecc_repairable_uncorrected"};
constexpr std::string_view kRepairableCounter = "mem_ecc_repairable_uncorrected";

void readName(const fs::path& path, std::string_view name, std::string& out,
              std::vector<std::string>& problems) {
  auto value = readParsed(path, name, parseName);
  if (value) {
    out = std::move(*value);
  } else {
    problems.push_back(value.error().message);
  }
}

// PCI identity, when the class device links to its PCI function ("device" symlink). The current
// driver creates the class device without a parent, so this is often absent; then NUMA and BDF
// stay unknown rather than guessed.
void readPciIdentity(const fs::path& devicePath, DeviceFacts& facts) {
  std::error_code ec;
  const fs::path link = devicePath / "device";
  const fs::path target = fs::read_symlink(link, ec);
  if (ec) return;
  facts.pciBdf = target.filename().string();
  facts.numaNode = numaNodeOfFunction(link);
}

}  // namespace

Result<std::vector<int>> listDeviceIndices(const DiscoveryRoots& roots) {
  const fs::path classDir = roots.neuronClass();
  std::error_code ec;
  fs::directory_iterator it(classDir, ec);
  if (ec) {
    return makeError(ErrorCode::kNotFound,
                     classDir.string() + ": " + ec.message() +
                         " (is the Neuron driver loaded? is --sysfs-root right?)");
  }
  std::vector<int> indices;
  for (const fs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("neuron") || name.size() == 6) continue;
    auto index = parseInt(std::string_view(name).substr(6), 0, kMaxDevices - 1);
    if (index && std::to_string(*index) == name.substr(6)) indices.push_back(*index);
  }
  std::sort(indices.begin(), indices.end());
  return indices;
}

VolatileHealthFiles volatileHealthFiles(const DiscoveryRoots& roots, int index) {
  const fs::path base = roots.deviceDir(index);
  VolatileHealthFiles files;
  files.reset = roots.resetFile(index).string();
  for (const char* counter : kUncorrectedCounters) {
    files.eccCounters.emplace_back(counter, (base / "stats" / "hardware" / counter).string());
  }
  files.deviceNode = roots.deviceNode(index).string();
  return files;
}

VolatileHealth probeVolatileHealth(const VolatileHealthFiles& files) {
  using topology::HealthDimension;
  VolatileHealth health;
  if (auto state = readParsed(files.reset, "reset", parseResetState)) {
    if (*state == 2) {
      health.problems.push_back({HealthDimension::kDeviceLost, "ResetStateInvalid",
                                 "reset: device state is INVALID (2) after a reset"});
    }
  } else {
    health.unreadable.push_back("reset state: " + state.error().message);
  }
  for (const auto& [counter, path] : files.eccCounters) {
    auto text = readAttribute(path);
    if (!text) {
      if (text.error().code == ErrorCode::kNotFound) continue;  // no such counter on inf1
      health.unreadable.push_back("stats/hardware/" + counter + ": " + text.error().message);
      continue;
    }
    auto value = parseCounter(*text);
    if (!value) {
      health.unreadable.push_back("stats/hardware/" + counter + ": " + value.error().message +
                                  " (" + path + ")");
    } else if (*value > 0 && counter == kRepairableCounter) {
      health.problems.push_back({HealthDimension::kEccUncorrected,
                                 std::string(kHbmRepairPendingCode),
                                 "stats/hardware/" + counter + " is " + std::to_string(*value) +
                                     " (uncorrected HBM errors awaiting repair; a reset "
                                     "repairs them)"});
    } else if (*value > 0) {
      // "mem_ecc_uncorrected" -> "mem": the memory the errors were in.
      health.problems.push_back({HealthDimension::kEccUncorrected,
                                 counter.substr(0, counter.find('_')),
                                 "stats/hardware/" + counter + " is " + std::to_string(*value) +
                                     " (uncorrected ECC errors)"});
    }
  }
  struct stat info {};
  if (::stat(files.deviceNode.c_str(), &info) != 0) {
    health.problems.push_back({HealthDimension::kDeviceLost, "DeviceNodeMissing",
                               "device node " + files.deviceNode + " is missing"});
  }
  return health;
}

DeviceFacts scanDevice(const DiscoveryRoots& roots, int index) {
  DeviceFacts facts;
  facts.index = index;
  facts.sysfsPath = roots.deviceDir(index);
  const fs::path& base = facts.sysfsPath;
  std::vector<std::string>& problems = facts.problems;

  if (auto cores = readParsed(base / "core_count", "core_count", parseCoreCount)) {
    facts.coreCount = *cores;
  } else {
    problems.push_back(cores.error().message);
  }
  if (auto links =
          readParsed(base / "connected_devices", "connected_devices", parseConnectedDevices)) {
    facts.connected = std::move(*links);
  } else {
    problems.push_back(links.error().message);
  }
  const fs::path arch = base / "info" / "architecture";
  readName(arch / "arch_type", "arch_type", facts.archType, problems);
  readName(arch / "instance_type", "instance_type", facts.familyName, problems);
  readName(arch / "device_name", "device_name", facts.deviceName, problems);

  std::error_code ec;
  if (fs::exists(base / "info" / "serial_number", ec)) {
    if (auto serial =
            readParsed(base / "info" / "serial_number", "serial_number", parseSerialNumber)) {
      facts.serialNumber = std::move(*serial);
    } else {
      problems.push_back(serial.error().message);
    }
  }
  facts.volatileHealth = probeVolatileHealth(volatileHealthFiles(roots, index));
  readPciIdentity(base, facts);
  return facts;
}

}  // namespace torus::discovery
