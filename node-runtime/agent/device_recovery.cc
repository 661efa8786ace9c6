#include "node-runtime/agent/device_recovery.h"

#include "common/base/log.h"
#include "common/metrics/event_counters.h"
#include "node-runtime/health/deep_check/device_memory.h"

namespace torus::agent {

DeviceRecovery::DeviceRecovery(health::NodeMonitor& monitor, RecoveryOptions options,
                               BusyDevices busyDevices)
    : monitor_(monitor), options_(std::move(options)), busyDevices_(std::move(busyDevices)) {
  monitor_.enableRecoveryGate();
  subscription_ = monitor_.onChange([this] {
    {
      std::lock_guard lock(mutex_);
      changed_ = true;
    }
    wake_.notify_one();
  });
  thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

DeviceRecovery::~DeviceRecovery() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void DeviceRecovery::loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    {
      // Also once a second: a device in use becomes idle without the node model changing.
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, stop, std::chrono::seconds(1), [this] { return changed_; });
      changed_ = false;
    }
    if (stop.stop_requested()) break;
    recoverWaiting();
  }
}

void DeviceRecovery::recoverWaiting() {
  const topology::DeviceSet waiting = monitor_.awaitingRecovery();
  if (waiting.empty()) return;
  const topology::DeviceSet busy = busyDevices_ ? busyDevices_() : topology::DeviceSet();
  const auto now = std::chrono::steady_clock::now();
  for (const int device : waiting.ids()) {
    if (busy.contains(device)) continue;
    const auto failed = lastFailure_.find(device);
    if (failed != lastFailure_.end() && now - failed->second < options_.retryAfter) continue;
    const auto started = std::chrono::steady_clock::now();
    const Attempt attempt = resetAndTest(device);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    metrics::processCounters().add(metrics::names::kRecoveriesTotal, {{"result", attempt.result}});
    if (attempt.outcome && !attempt.untested.empty()) {
      lastFailure_.erase(device);
      TORUS_LOG(Warn, Health,
                "device back in service after a reset; its memory was not tested (the agent may "
                "not write its BAR)",
                {"device", device}, {"seconds", seconds}, {"why", attempt.untested});
    } else if (attempt.outcome) {
      lastFailure_.erase(device);
      TORUS_LOG(Info, Health, "device back in service after a reset and a passing self-test",
                {"device", device}, {"seconds", seconds});
    } else {
      lastFailure_[device] = std::chrono::steady_clock::now();
      TORUS_LOG(Warn, Health, "device recovery failed; it stays out of service", {"device", device},
                {"problem", attempt.outcome.error().message},
                {"retry_after_ms", static_cast<std::int64_t>(options_.retryAfter.count())});
    }
    monitor_.reportRecovery(device, attempt.outcome,
                            attempt.untested.empty() ? "reset,self-test" : "reset");
  }
}

DeviceRecovery::Attempt DeviceRecovery::resetAndTest(int device) {
  if (auto reset = reset::resetDevice(monitor_.roots(), device, options_.reset); !reset) {
    return {makeError(ErrorCode::kUnavailable, "reset: " + reset.error().message), "reset_failed",
            ""};
  }
  const topology::Node node = monitor_.node();
  if (device < 0 || device >= node.deviceCount()) {
    return {makeError(ErrorCode::kNotFound, "no neuron" + std::to_string(device)), "reset_failed",
            ""};
  }
  const health::MemoryTestResult memory = health::testDeviceMemory(
      monitor_.roots(), node.devices[static_cast<std::size_t>(device)], options_.selfTestBytes);
  // Where the agent may not write the BAR (the chart's read-only /sys), the reset is all the
  // evidence there is: the device returns, and the result and the log say what was not tested.
  if (!memory.tested) return {okResult(), "reset_only", memory.problem};
  if (!memory.passed) {
    return {makeError(ErrorCode::kUnavailable, "self-test: " + memory.problem), "self_test_failed",
            ""};
  }
  return {okResult(), "passed", ""};
}

}  // namespace torus::agent
