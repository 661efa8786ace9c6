#include "node-runtime/metrics/agent_metrics.h"

#include <utility>

#include "common/base/version.h"
#include "common/contracts/agent_metrics.h"
#include "common/metrics/prometheus_text.h"

namespace torus::metrics {
namespace {

namespace wire = contracts::agent_metrics;
using namespace metrics::names;
using metrics::Labels;
using metrics::PrometheusText;

// neuron-monitor's execution_status_total{status_type} from the driver's status counters.
constexpr std::pair<const char*, const char*> kStatusTypes[] = {
    {wire::kStatusCompleted, "success"},
    {"completed_with_err", "execute_completed_with_error"},
    {"completed_with_num_err", "execute_completed_with_num_error"},
    {"timed_out", "timeout"},
    {"incorrect_input", "exec_bad_input"},
    {"failed_to_queue", "execute_failed_to_queue"},
};

// execution_errors_total{error_type}: which driver counters add up to each type.
struct ErrorType {
  const char* name;
  std::vector<const char*> counters;
};
const ErrorType kErrorTypes[] = {
    {"generic", {"generic_error", "failure"}},
    {"runtime", {"resource_error"}},
    {"hardware",
     {"hw_error", "hw_hbm_ue_error", "hw_nc_ue_error", "hw_dma_abort_error",
      "hw_collectives_error"}},
};

// neuron-monitor's per-core memory families.
constexpr const char* kCoreMemoryCategories[] = {
    "constants", "model_code", "model_shared_scratchpad", "runtime_memory", "tensors"};

struct CounterFamily {
  const char* name;
  const char* help;
};
const CounterFamily kEventFamilies[] = {
    {kAllocationsTotal, "Successful Allocate calls from kubelet, by resource."},
    {kAllocateErrorsTotal, "Allocate calls refused (unknown, held or unhealthy ids), by resource."},
    {kPreferredTotal,
     "GetPreferredAllocation answers, by resource and source (extender hand-off or placement)."},
    {kPromisesRefusedTotal,
     "Scheduler-extender promises the plugin refused because they break the placement rule on "
     "the node as discovered (e.g. a NeuronLink down), by resource."},
    {kRegistrationsTotal, "Registrations with kubelet, by resource and result."},
    {kResetsTotal, "Device resets before a container start, by result."},
    {kReleaseResetsTotal, "Device resets after containers gave their cores back, by result."},
    {kHealthTransitionsTotal, "Device health changes, by device and new state."},
    {kKernelErrorsTotal,
     "NEURON_HW_ERR claims in the kernel log about a chip of this node (named by its serial "
     "number), by type and device; any holder of a device node can write one."},
    {kKernelErrorsActedOnTotal,
     "NEURON_HW_ERR claims acted on (the chip out of service, AWS's conditions), by type, device "
     "and proof (firmware_ecc: its firmware ECC counters rose within the hold; trusted: "
     "--kernel-log-trust-reports)."},
    {kDeepCheckRunsTotal, "Deep health checks run, by result (passed, failed)."},
    {kRecoveriesTotal,
     "Attempts to bring a device whose fault cleared back into service (reset, then a memory "
     "self-test), by result (passed; reset_only: the self-test could not run, as under a read-only "
     "/sys; reset_failed; self_test_failed)."},
    {kDraPrepareTotal, "DRA NodePrepareResources answers per claim, by result (ok, error)."},
    {kDraUnprepareTotal, "DRA NodeUnprepareResources answers per claim, by result (ok, error)."},
    {kDraSlicePublishTotal, "ResourceSlice pool publications, by result (ok, error)."},
    {kDraUnresetCoresTotal,
     "NeuronCores a DRA claim got without a reset since their last claim: their chip still served "
     "another claim when they were given back, and a reset wipes a whole chip."},
    {kDraOverlapsRefusedTotal,
     "DRA claims refused at prepare because a prepared claim already holds some of their cores."},
    {kDraUnprepareHeldTotal,
     "DRA NodeUnprepareResources calls refused because a pod the claim was prepared for still "
     "has processes on the node (force-deleted, its containers still stopping); kubelet retries."},
    {kDoubleAllocationsTotal,
     "Times kubelet gave the same NeuronCores to two running pods (kubernetes/kubernetes#137534), "
     "by resource; each is refused at container start until one pod holds them."},
    {kListsHeldTotal,
     "pod-resources Lists held back while kubelet had a device allocation in flight (a List "
     "then makes kubelet give the in-flight ids to a second pod)."},
    {kListsHeldSecondsTotal, "Seconds pod-resources Lists were held back, summed."},
    {kHttpConnectionsCutTotal, kHttpConnectionsCutHelp},
};

std::uint64_t valueOr(const std::map<std::string, std::uint64_t>& values, const std::string& key) {
  const auto it = values.find(key);
  return it == values.end() ? 0 : it->second;
}

Labels with(Labels labels, std::string key, std::string value) {
  labels.emplace_back(std::move(key), std::move(value));
  return labels;
}

Labels withAll(Labels labels, const Labels& more) {
  labels.insert(labels.end(), more.begin(), more.end());
  return labels;
}

}  // namespace

std::string renderAgentMetrics(const topology::Node& node, const NodeStats& stats,
                               const CoreTenants& tenants, const metrics::EventCounters& counters,
                               const metrics::LatencyHistograms& histograms) {
  PrometheusText out;
  const Labels base = {{wire::kInstanceTypeLabel, node.instanceType}};
  const int lnc = node.lnc > 0 ? node.lnc : 1;

  out.family("instance_info", "gauge", "The instance this agent runs on.");
  out.sample("instance_info", base, 1);
  out.family(wire::kHardwareInfo, "gauge", "The node's Neuron hardware.");
  Labels hardware = base;
  if (node.catalog != nullptr) {
    hardware.emplace_back(
        "neuron_device_type",
        std::string(topology::architectureOf(node.catalog->generation).deviceName));
  }
  hardware.emplace_back(wire::kDeviceCountLabel, std::to_string(node.deviceCount()));
  hardware.emplace_back(wire::kCoresPerDeviceLabel, std::to_string(node.logicalCoresPerDevice()));
  hardware.emplace_back(wire::kLncLabel, std::to_string(node.lnc));
  out.sample(wire::kHardwareInfo, hardware, 1);

  out.family(wire::kEccEvents, "counter",
             "Uncorrected ECC events per device since the driver loaded.");
  for (std::size_t d = 0; d < stats.devices.size(); ++d) {
    for (const auto& [event, value] : stats.devices[d].ecc) {
      out.sample(wire::kEccEvents,
                 withAll(with(with(base, wire::kEventTypeLabel, event), wire::kDeviceIndexLabel,
                              std::to_string(d)),
                         tenants.deviceLabels(static_cast<int>(d))),
                 static_cast<double>(value));
    }
  }

  // Physical core m of device d belongs to logical core d * coresPerDevice + m / lnc.
  const auto coreLabels = [&](std::size_t device, std::size_t physical) {
    const int core =
        static_cast<int>(device) * node.logicalCoresPerDevice() + static_cast<int>(physical) / lnc;
    return withAll(with(with(base, wire::kDeviceIndexLabel, std::to_string(device)),
                        wire::kCoreLabel, std::to_string(core)),
                   tenants.coreLabels(core));
  };
  // Sums the physical cores of each logical core.
  const auto perLogicalCore = [&](auto valueOfPhysical) {
    std::vector<std::pair<Labels, double>> samples;
    for (std::size_t d = 0; d < stats.devices.size(); ++d) {
      const auto& cores = stats.devices[d].cores;
      for (std::size_t m = 0; m < cores.size(); m += static_cast<std::size_t>(lnc)) {
        double sum = 0;
        for (std::size_t k = m; k < m + static_cast<std::size_t>(lnc) && k < cores.size(); ++k) {
          sum += valueOfPhysical(cores[k]);
        }
        samples.emplace_back(coreLabels(d, m), sum);
      }
    }
    return samples;
  };

  for (const char* category : kCoreMemoryCategories) {
    const std::string name = std::string(wire::kCoreMemoryUsagePrefix) + category;
    out.family(name, "gauge",
               std::string("Device memory in use for ") + category + " per NeuronCore, in bytes.");
    for (const auto& [labels, value] : perLogicalCore([&](const PhysicalCoreStats& core) {
           return static_cast<double>(valueOr(core.deviceMemory, category));
         })) {
      out.sample(name, with(labels, "memory_location", "device"), value);
    }
  }

  out.family("neuron_runtime_memory_used_bytes", "gauge",
             "Memory in use by Neuron runtimes per device, on the host and on the device.");
  for (std::size_t d = 0; d < stats.devices.size(); ++d) {
    double host = 0;
    double device = 0;
    for (const PhysicalCoreStats& core : stats.devices[d].cores) {
      host += static_cast<double>(core.hostMemory);
      for (const auto& [category, bytes] : core.deviceMemory)
        device += static_cast<double>(bytes);
    }
    const Labels labels = withAll(with(base, wire::kDeviceIndexLabel, std::to_string(d)),
                                  tenants.deviceLabels(static_cast<int>(d)));
    out.sample("neuron_runtime_memory_used_bytes", with(labels, "memory_location", "host"), host);
    out.sample("neuron_runtime_memory_used_bytes", with(labels, "memory_location", "neuron_device"),
               device);
  }

  out.family(wire::kExecutionStatus, "counter", "Executions per NeuronCore, by outcome.");
  for (const auto& status : kStatusTypes) {
    const char* counter = status.second;  // a plain name: clang 14 cannot capture a binding
    for (const auto& [labels, value] : perLogicalCore([&](const PhysicalCoreStats& core) {
           return static_cast<double>(valueOr(core.status, counter));
         })) {
      out.sample(wire::kExecutionStatus, with(labels, wire::kStatusTypeLabel, status.first), value);
    }
  }
  out.family(wire::kExecutionErrors, "counter", "Execution errors per NeuronCore, by type.");
  for (const ErrorType& type : kErrorTypes) {
    for (const auto& [labels, value] : perLogicalCore([&](const PhysicalCoreStats& core) {
           double sum = 0;
           for (const char* counter : type.counters)
             sum += static_cast<double>(valueOr(core.status, counter));
           return sum;
         })) {
      out.sample(wire::kExecutionErrors, with(labels, "error_type", type.name), value);
    }
  }

  out.family(wire::kDeviceHealthy, "gauge",
             "1 when the device is in service, 0 when a health check took it out.");
  for (const topology::Device& device : node.devices) {
    out.sample(wire::kDeviceHealthy,
               withAll(with(base, wire::kDeviceIndexLabel, std::to_string(device.index)),
                       tenants.deviceLabels(device.index)),
               device.health.healthy ? 1 : 0);
  }
  // Neuron Observer's three states, one sample per state (1 for the current one) so that a
  // query can select a state without knowing the others.
  using topology::HealthState;
  constexpr HealthState kStates[] = {HealthState::kHealthy, HealthState::kUnhealthy,
                                     HealthState::kUnknown};
  out.family("torus_device_health_state", "gauge",
             "1 for the device's health state: healthy, unhealthy (a fault took it out of "
             "service) or unknown (in service, but a source of its health is lost).");
  for (const topology::Device& device : node.devices) {
    const Labels labels = with(base, wire::kDeviceIndexLabel, std::to_string(device.index));
    for (const HealthState state : kStates) {
      out.sample("torus_device_health_state",
                 with(labels, "state", std::string(topology::stateName(state))),
                 device.health.state() == state ? 1 : 0);
    }
  }
  out.family("torus_neuroncore_health_state", "gauge",
             "1 for the logical NeuronCore's health state, its device's.");
  for (const topology::Device& device : node.devices) {
    node.coresOfDevice(device.index).forEach([&](int core) {
      const Labels labels = with(with(base, wire::kDeviceIndexLabel, std::to_string(device.index)),
                                 wire::kCoreLabel, std::to_string(core));
      for (const HealthState state : kStates) {
        out.sample("torus_neuroncore_health_state",
                   with(labels, "state", std::string(topology::stateName(state))),
                   device.health.state() == state ? 1 : 0);
      }
    });
  }
  tenants.render(out, base);
  out.family("torus_sysfs_read_errors", "gauge",
             "Driver counter files that could not be read in this scrape.");
  out.sample("torus_sysfs_read_errors", base, static_cast<double>(stats.problems.size()));

  for (const CounterFamily& family : kEventFamilies)
    counters.render(out, family.name, family.help);
  histograms.render(out, metrics::names::kAllocateSeconds,
                    "Time to answer kubelet's Allocate, by resource.");
  histograms.render(out, metrics::names::kDraRequestSeconds,
                    "Time to answer kubelet's DRA NodePrepareResources and "
                    "NodeUnprepareResources calls (all claims of a call), by call.");
  out.family("torus_build_info", "gauge", "The running agent's version.");
  out.sample("torus_build_info", {{"version", std::string(versionString())}}, 1);
  return out.text();
}

}  // namespace torus::metrics
