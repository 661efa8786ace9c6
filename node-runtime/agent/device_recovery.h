// DeviceRecovery: brings devices back into service once their fault has cleared, by the only
// evidence that they work again — a reset and a passing self-test (the reset alone, said in the
// log and the metric, where the agent may not write the memory BAR). The NodeMonitor's recovery
// gate (health/recovery_gate.h) holds such devices out; this runner, woken by every change of the
// node model and once a second, takes each waiting device that nothing uses (no container, no
// prepared claim, no open file), resets it (reset/core_reset.h) and pattern-tests a window of its
// memory (health/deep_check/device_memory.h), then reports the outcome to the monitor. A failed
// attempt is retried after `retryAfter`; a device in use waits until it is released.
//
// Owns: its thread and when each device was last tried. Does not own: the reset, the test, or
// which devices are in use (the callback, as for the deep check).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/base/change_notifier.h"
#include "common/topology/node.h"
#include "node-runtime/health/node_monitor.h"
#include "node-runtime/reset/core_reset.h"

namespace torus::agent {

struct RecoveryOptions {
  std::uint64_t selfTestBytes = 4 << 20;  // memory window pattern-tested per device
  std::chrono::milliseconds retryAfter = std::chrono::seconds(30);
  reset::ResetPolicy reset;
};

class DeviceRecovery {
 public:
  using BusyDevices = std::function<topology::DeviceSet()>;

  // Turns the monitor's recovery gate on and starts the runner.
  DeviceRecovery(health::NodeMonitor& monitor, RecoveryOptions options, BusyDevices busyDevices);
  ~DeviceRecovery();
  DeviceRecovery(const DeviceRecovery&) = delete;
  DeviceRecovery& operator=(const DeviceRecovery&) = delete;

 private:
  void loop(std::stop_token stop);
  // One pass: every waiting, idle device not tried within retryAfter.
  void recoverWaiting();
  // An attempt's outcome (its error names the step) and its torus_device_recoveries_total result.
  struct Attempt {
    Result<void> outcome;
    const char* result;    // passed, reset_only, reset_failed, self_test_failed
    std::string untested;  // reset_only: why the memory self-test could not run
  };
  Attempt resetAndTest(int device);

  health::NodeMonitor& monitor_;
  const RecoveryOptions options_;
  const BusyDevices busyDevices_;
  std::map<int, std::chrono::steady_clock::time_point> lastFailure_;  // by device
  std::mutex mutex_;
  std::condition_variable_any wake_;
  bool changed_ = true;
  ChangeNotifier::Subscription subscription_;
  std::jthread thread_;
};

}  // namespace torus::agent
