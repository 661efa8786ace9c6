// DeepCheckRunner: runs the deep health check inside the agent — every --deep-check-interval on
// a background thread when set, and whenever POST /deep-check asks — one run at a time. Each
// result goes to the NodeMonitor (failing devices leave service with the reason naming the
// device or link; a later passing check brings them back), to the metrics, and is kept for
// GET /deep-check.
//
// Owns: its thread and the last result. Does not own: what is tested
// (health/deep_check/deep_check.h) or which devices are in use (the callback, from the device
// plugin's allocations).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "common/topology/node.h"
#include "node-runtime/health/deep_check/deep_check.h"
#include "node-runtime/health/node_monitor.h"
#include "node-runtime/metrics/deep_check_metrics.h"

namespace torus::agent {

class DeepCheckRunner {
 public:
  using BusyDevices = std::function<topology::DeviceSet()>;

  DeepCheckRunner(health::NodeMonitor& monitor, health::DeepCheckOptions options,
                  std::chrono::milliseconds interval, BusyDevices busyDevices);
  ~DeepCheckRunner();
  DeepCheckRunner(const DeepCheckRunner&) = delete;
  DeepCheckRunner& operator=(const DeepCheckRunner&) = delete;

  // Runs a check now and returns its result. A caller that arrives while a run is in progress
  // gets that run's result instead of queueing another (twelve concurrent POSTs would otherwise
  // run twelve checks back to back).
  health::DeepCheckResult runNow();
  std::optional<metrics::DeepCheckSnapshot> last() const;

 private:
  void loop(std::stop_token stop);

  health::NodeMonitor& monitor_;
  const health::DeepCheckOptions options_;
  const std::chrono::milliseconds interval_;
  const BusyDevices busyDevices_;
  mutable std::mutex mutex_;
  std::condition_variable finished_;
  bool running_ = false;  // one check at a time: they share the devices
  std::uint64_t runsFinished_ = 0;
  std::optional<metrics::DeepCheckSnapshot> last_;
  std::jthread thread_;
};

}  // namespace torus::agent
