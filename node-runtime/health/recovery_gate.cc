#include "node-runtime/health/recovery_gate.h"

namespace torus::health {

void RecoveryGate::apply(topology::Node& next) {
  for (topology::Device& device : next.devices) {
    auto held = entries_.find(device.index);
    // The monitor starts some passes from the last published node: this gate's own reason
    // carried over from there is not a new fault.
    const bool carried = held != entries_.end() && !device.health.healthy &&
                         device.health.reason == held->second.published;
    if (!device.health.healthy && !carried) {
      // A live fault: remember (or refresh) why, and forget any earlier attempt.
      Entry fresh;
      fresh.cause = device.health.reason;
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
    if (entry.signalsQuiet && !entry.recovered) devices.insert(device);
  }
  return devices;
}

void RecoveryGate::record(int device, const Result<void>& outcome) {
  const auto held = entries_.find(device);
  if (held == entries_.end() || !held->second.signalsQuiet) return;
  if (outcome) {
    held->second.recovered = true;
  } else {
    held->second.problem = outcome.error().message;
  }
}

}  // namespace torus::health
