#include "node-runtime/monitor/device_stats.h"

#include <system_error>

#include "node-runtime/discovery/sysfs_attribute.h"

namespace torus::monitor {
namespace {

namespace fs = std::filesystem;

constexpr const char* kEccCounters[] = {"mem_ecc_uncorrected", "mem_ecc_repairable_uncorrected",
                                        "sram_ecc_uncorrected"};

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

const std::vector<std::string>& memoryCategories() {
  static const std::vector<std::string> categories = {
      "constants",      "model_code",    "model_shared_scratchpad",
      "runtime_memory", "tensors",       "collectives",
      "dma_rings",      "driver_memory", "nonshared_scratchpad",
      "notifications",  "uncategorized"};
  return categories;
}

const std::vector<std::string>& statusCounters() {
  static const std::vector<std::string> counters = {"success",
                                                    "failure",
                                                    "timeout",
                                                    "exec_bad_input",
                                                    "hw_error",
                                                    "execute_completed_with_error",
                                                    "execute_completed_with_num_error",
                                                    "generic_error",
                                                    "resource_error",
                                                    "execute_failed_to_queue",
                                                    "hw_hbm_ue_error",
                                                    "hw_nc_ue_error",
                                                    "hw_dma_abort_error",
                                                    "hw_collectives_error"};
  return counters;
}

NodeStats readNodeStats(const discovery::DiscoveryRoots& roots, const topology::Node& node) {
  NodeStats stats;
  stats.devices.resize(node.devices.size());
  for (const topology::Device& device : node.devices) {
    DeviceStats& out = stats.devices[static_cast<std::size_t>(device.index)];
    const fs::path dir = roots.neuronClass() / ("neuron" + std::to_string(device.index));
    for (const char* name : kEccCounters) {
      if (auto value = counter(dir / "stats" / "hardware" / name, stats.problems)) {
        out.ecc[name] = *value;
      }
    }
    out.cores.resize(static_cast<std::size_t>(device.physicalCores));
    for (int core = 0; core < device.physicalCores; ++core) {
      PhysicalCoreStats& coreStats = out.cores[static_cast<std::size_t>(core)];
      const fs::path coreDir = dir / ("neuron_core" + std::to_string(core)) / "stats";
      const fs::path deviceMem = coreDir / "memory_usage" / "device_mem";
      for (const std::string& category : memoryCategories()) {
        if (auto value = counter(deviceMem / category / "total", stats.problems)) {
          coreStats.deviceMemory[category] = *value;
        }
      }
      if (auto value = counter(coreDir / "memory_usage" / "host_mem" / "total", stats.problems)) {
        coreStats.hostMemory = *value;
      }
      for (const std::string& name : statusCounters()) {
        if (auto value = counter(coreDir / "status" / name / "total", stats.problems)) {
          coreStats.status[name] = *value;
        }
      }
    }
  }
  return stats;
}

}  // namespace torus::monitor
