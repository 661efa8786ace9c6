// The node agent's side of the kernel log: which chip a NEURON_HW_ERR line names, and what is
// done about it. A line is a claim anyone holding a device node can make (the driver's printk
// ioctl), so alone it is counted, logged and posted as an Event; the chip leaves service, its
// taints get their effect and AWS's conditions are set only once its firmware ECC counters
// confirm it (health/hardware_error_proof.h), or at once under --kernel-log-trust-reports.
#include "common/base/log.h"
#include "common/contracts/agent_metrics.h"
#include "common/metrics/event_counters.h"
#include "node-runtime/agent/node_agent.h"
#include "node-runtime/discovery/device_scan.h"

namespace torus::agent {
namespace {

// How a device's health names the kernel log when the agent cannot follow it.
constexpr const char* kKernelLogSource = "kernel log";
// At most one claim Event per device this often: a tenant can write lines as fast as it likes,
// and each post is a request to the API server on the log reader's thread.
constexpr std::chrono::seconds kClaimEventEvery{60};

}  // namespace

void NodeAgent::followKernelLog(const AgentConfig& config) {
  if (config.kernelLog == "none") return;
  const std::filesystem::path path = config.kernelLog.empty()
                                         ? prepared_.roots.kernelLog()
                                         : std::filesystem::path(config.kernelLog);
  std::vector<std::vector<std::string>> eccCounters;
  for (const topology::Device& device : monitor_->node().devices) {
    deviceFunctions_.push_back(device.pciBdf);
    deviceSerials_.push_back(device.serialNumber);
    std::vector<std::string> files;
    for (const auto& [name, file] :
         discovery::volatileHealthFiles(prepared_.roots, device.index).eccCounters) {
      files.push_back(file);
    }
    eccCounters.push_back(std::move(files));
  }
  if (config.kernelLogTrustReports) {
    TORUS_LOG(Warn, Health,
              "--kernel-log-trust-reports: a NEURON_HW_ERR line alone takes its chip out of "
              "service and sets AWS's conditions; any process holding a Neuron device can write "
              "one, so use this only where the node has one tenant");
  } else {
    hardwareErrorProof_ = std::make_unique<health::HardwareErrorProof>(
        std::move(eccCounters), std::chrono::milliseconds(config.kernelErrorHoldMs),
        std::chrono::milliseconds(config.healthIntervalMs),
        [this](const health::HardwareErrorClaim& claim) {
          actOnHardwareError(claim.device, claim.type, "firmware_ecc");
        },
        [](const health::HardwareErrorClaim& claim) {
          TORUS_LOG(Info, Health,
                    "a kernel-log hardware error claim was not confirmed by the chip's firmware "
                    "ECC counters; nothing was done",
                    {"device", claim.device}, {"type", claim.type});
        });
  }
  auto watcher = health::KernelLogWatcher::start(
      path,
      [this](health::KernelHardwareError error, const std::string& line) {
        onKernelClaim(std::move(error), line);
      },
      health::KernelLogWatcher::Source::kEither,
      [this](const std::string& lostBecause) {
        if (lostBecause.empty()) {
          monitor_->setSourceRestored(kKernelLogSource);
        } else {
          monitor_->setSourceLost(kKernelLogSource, lostBecause);
        }
      });
  if (!watcher) {
    TORUS_LOG(Warn, Health, "not following the kernel log; hardware errors it reports are missed",
              {"error", watcher.error().message});
    kernelLogError_ = watcher.error().message;
    // Every chip's health is unknown from now on: the faults the kernel reports go unseen.
    monitor_->setSourceLost(kKernelLogSource, kernelLogError_);
    return;
  }
  kernelLog_ = std::move(*watcher);
  TORUS_LOG(Info, Health, "following the kernel log", {"path", kernelLog_->source()},
            {"hold_ms", config.kernelErrorHoldMs}, {"trust_reports", config.kernelLogTrustReports});
}

void NodeAgent::onKernelClaim(health::KernelHardwareError error, const std::string& line) {
  // The serial number names the chip: nd-id counts from the writer's own numbering, and a test
  // bed's nodes share one log.
  const auto device = health::deviceOfSerialNumber(deviceSerials_, error.serialNumber);
  if (!device) {
    TORUS_LOG(Debug, Health, "a Neuron hardware error of a chip not on this node",
              {"serial_number", error.serialNumber}, {"line", line});
    return;
  }
  if (!error.pciAddress.empty() &&
      health::deviceOfPciFunction(deviceFunctions_, error.pciAddress) != device) {
    TORUS_LOG(Warn, Health,
              "a NEURON_HW_ERR line whose PCI function is not the chip its serial number names; "
              "ignored",
              {"serial_number", error.serialNumber}, {"function", error.pciAddress},
              {"line", line});
    return;
  }
  metrics::processCounters().add(
      metrics::names::kKernelErrorsTotal,
      {{"type", error.type},
       {contracts::agent_metrics::kDeviceIndexLabel, std::to_string(*device)}});
  kernelLines_.add(*device, error.type, line);
  const bool trusted = !hardwareErrorProof_;
  const bool proven = trusted || hardwareErrorProof_->claim(*device, error.type);
  TORUS_LOG(Warn, Health, "the kernel log claims a Neuron hardware error", {"device", *device},
            {"type", error.type},
            {"verdict", trusted  ? "trusted (--kernel-log-trust-reports)"
                        : proven ? "confirmed by the firmware ECC counters"
                                 : "waiting for the firmware ECC counters to confirm it"});
  if (nodeEvents_) {
    bool post = false;
    {
      std::lock_guard lock(claimEventsMutex_);
      const auto now = std::chrono::steady_clock::now();
      auto [last, fresh] = lastClaimEvent_.try_emplace(*device, now);
      if (fresh || now - last->second >= kClaimEventEvery) {
        last->second = now;
        post = true;
      }
    }
    if (post) {
      nodeEvents_->warn("NeuronHardwareErrorClaimed",
                        "the kernel log says NEURON_HW_ERR=" + error.type + " on neuron" +
                            std::to_string(*device) +
                            (proven ? ""
                                    : "; not acted on unless the chip's firmware ECC "
                                      "counters confirm it"));
    }
  }
  if (proven) actOnHardwareError(*device, error.type, trusted ? "trusted" : "firmware_ecc");
}

void NodeAgent::actOnHardwareError(int device, const std::string& type, const std::string& proof) {
  metrics::processCounters().add(
      metrics::names::kKernelErrorsActedOnTotal,
      {{"type", type},
       {contracts::agent_metrics::kDeviceIndexLabel, std::to_string(device)},
       {"proof", proof}});
  TORUS_LOG(Warn, Health, "a Neuron hardware error is acted on", {"device", device}, {"type", type},
            {"proof", proof});
  hardwareErrors_.report(type, device);
  monitor_->reportKernelError(device, type);
  if (nodeEvents_ && proof != "trusted") {
    nodeEvents_->warn("NeuronHardwareErrorConfirmed",
                      "NEURON_HW_ERR=" + type + " on neuron" + std::to_string(device) +
                          " is confirmed by its firmware ECC counters; it is out of service");
  }
}

}  // namespace torus::agent
