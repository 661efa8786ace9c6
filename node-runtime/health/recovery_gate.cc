#include "node-runtime/health/recovery_gate.h"

#include "node-runtime/discovery/device_scan.h"

namespace torus::health {
namespace {

// Whether every problem of `health` is one a reset repairs while it is live: an uncorrectable HBM
// error awaiting repair (discovery/device_scan.cc). Such a device cannot wait for its signal to
// go quiet; the reset is what quiets it.
bool repairedByReset(const topology::DeviceHealth& health) {
  if (health.problems.empty()) return false;
  for (const topology::HealthProblem& problem : health.problems) {
    if (problem.dimension != topology::HealthDimension::kEccUncorrected ||
        problem.code != discovery::kHbmRepairPendingCode) {
      return false;
    }
  }
  return true;
}

}  // namespace

void RecoveryGate::apply(topology::Node& next) {
  for (topology::Device& device : next.devices) {
    auto held = entries_.find(device.index);
    // The monitor starts some passes from the last published node: this gate's own reason
    // carried over from there is not a new fault.
    const bool carried = held != entries_.end() && !device.health.healthy &&
                         device.health.reason == held->second.published;
    if (!device.health.healthy && !carried) {
      // A live fault: remember (or refresh) why, and forget any earlier attempt, unless it is
      // the same fault a reset is repairing (its attempts stand until it clears or changes).
      const bool repairable = repairedByReset(device.health);
      if (held != entries_.end() && repairable && held->second.repairable &&
          held->second.cause == device.health.reason) {
        // Reset, and still awaiting repair: try again at the next round.
        if (held->second.recovered) {
          held->second.recovered = false;
          held->second.problem = "reset: the error still awaits repair after a reset";
        }
        continue;
      }
      Entry fresh;
      fresh.cause = device.health.reason;
      fresh.repairable = repairable;
      entries_[device.index] = std::move(fresh);
      continue;
    }
    if (held == entries_.end()) continue;
    Entry& entry = held->second;
    if (entry.recovered) {
      if (carried) {
        topology::DeviceHealth back;
        back.unmonitored = std::move(device.health.unmonitored);
        device.health = std::move(back);
      }
      entries_.erase(held);
      continue;
    }
    entry.signalsQuiet = true;
    const std::string since = " (left service for: " + entry.cause + ")";
    entry.published = entry.problem.empty()
                          ? std::string(kRecoveringPrefix) +
                                " back in service after a reset and a passing self-test" + since
                          : std::string(kRecoveryFailedPrefix) + " " + entry.problem + since +
                                "; tried again while idle";
    const std::string code = entry.problem.empty()                 ? "Recovering"
                             : entry.problem.starts_with("reset:") ? "ResetFailed"
                                                                   : "SelfTestFailed";
    std::vector<std::string> unmonitored = std::move(device.health.unmonitored);
    device.health = topology::DeviceHealth::unhealthy(topology::HealthDimension::kRecovery, code,
                                                      entry.published);
    device.health.unmonitored = std::move(unmonitored);
  }
  // Devices that vanished from the node are forgotten with it.
  std::erase_if(entries_, [&](const auto& item) { return item.first >= next.deviceCount(); });
}

topology::DeviceSet RecoveryGate::waiting() const {
  topology::DeviceSet devices;
  for (const auto& [device, entry] : entries_) {
    if ((entry.signalsQuiet || entry.repairable) && !entry.recovered) devices.insert(device);
  }
  return devices;
}

void RecoveryGate::record(int device, const Result<void>& outcome) {
  const auto held = entries_.find(device);
  if (held == entries_.end() || !(held->second.signalsQuiet || held->second.repairable)) return;
  if (outcome) {
    held->second.recovered = true;
  } else {
    held->second.problem = outcome.error().message;
  }
}

}  // namespace torus::health
