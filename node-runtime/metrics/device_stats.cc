#include "node-runtime/metrics/device_stats.h"

#include <system_error>

#include "node-runtime/discovery/driver_counters.h"
#include "node-runtime/discovery/sysfs_attribute.h"

namespace torus::metrics {
namespace {

namespace fs = std::filesystem;

// A counter file, when it exists; a present but unreadable one becomes a problem.
std::optional<std::uint64_t> counter(const fs::path& path, std::vector<std::string>& problems) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  auto value = discovery::readParsed(path, path.filename().string(), discovery::parseCounter);
  if (!value) {
    problems.push_back(value.error().message);
    return std::nullopt;
  }
  return *value;
}

}  // namespace

NodeStats readNodeStats(const discovery::DiscoveryRoots& roots, const topology::Node& node) {
  NodeStats stats;
  stats.devices.resize(node.devices.size());
  for (const topology::Device& device : node.devices) {
    DeviceStats& out = stats.devices[static_cast<std::size_t>(device.index)];
    const fs::path dir = roots.neuronClass() / ("neuron" + std::to_string(device.index));
    for (const char* name : discovery::kEccCounters) {
      if (auto value = counter(dir / "stats" / "hardware" / name, stats.problems)) {
        out.ecc[name] = *value;
      }
    }
    out.cores.resize(static_cast<std::size_t>(device.physicalCores));
    for (int core = 0; core < device.physicalCores; ++core) {
      PhysicalCoreStats& coreStats = out.cores[static_cast<std::size_t>(core)];
      const fs::path coreDir = dir / ("neuron_core" + std::to_string(core)) / "stats";
      const fs::path deviceMem = coreDir / "memory_usage" / "device_mem";
      for (const char* category : discovery::kDeviceMemCategories) {
        if (auto value = counter(deviceMem / category / "total", stats.problems)) {
          coreStats.deviceMemory[category] = *value;
        }
      }
      if (auto value = counter(coreDir / "memory_usage" / "host_mem" / "total", stats.problems)) {
        coreStats.hostMemory = *value;
      }
      for (const char* name : discovery::kCoreStatusCounters) {
        if (auto value = counter(coreDir / "status" / name / "total", stats.problems)) {
          coreStats.status[name] = *value;
        }
      }
    }
  }
  return stats;
}

}  // namespace torus::metrics
