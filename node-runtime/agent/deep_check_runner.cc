#include "node-runtime/agent/deep_check_runner.h"

#include "common/base/log.h"
#include "common/base/sleep_until_stopped.h"
#include "common/base/strings.h"
#include "common/metrics/event_counters.h"
#include "node-runtime/health/deep_check/deep_check_report.h"

namespace torus::agent {
namespace {

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

DeepCheckRunner::DeepCheckRunner(health::NodeMonitor& monitor, health::DeepCheckOptions options,
                                 std::chrono::milliseconds interval, BusyDevices busyDevices)
    : monitor_(monitor),
      options_(std::move(options)),
      interval_(interval),
      busyDevices_(std::move(busyDevices)) {
  if (interval_.count() > 0) thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

DeepCheckRunner::~DeepCheckRunner() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

health::DeepCheckResult DeepCheckRunner::runNow() {
  {
    std::unique_lock lock(mutex_);
    if (running_) {
      const std::uint64_t awaited = runsFinished_ + 1;
      finished_.wait(lock, [&] { return runsFinished_ >= awaited; });
      return last_->result;
    }
    running_ = true;
  }
  // Asked again before each phase: a device allocated while the check runs is left alone from
  // then on.
  const auto busyNow = [this] { return busyDevices_ ? busyDevices_() : topology::DeviceSet(); };
  health::DeepCheckResult result =
      health::runDeepCheck(monitor_.node(), monitor_.roots(), busyNow, options_);
  const std::vector<std::string> failures = health::deepCheckFailures(result);
  metrics::processCounters().add(metrics::names::kDeepCheckRunsTotal,
                                 {{"result", failures.empty() ? "passed" : "failed"}});
  int skipped = 0;
  int notChecked = 0;
  for (const health::DeviceCheck& device : result.devices) {
    skipped += device.state == health::CheckState::kSkipped ? 1 : 0;
    notChecked += device.state == health::CheckState::kNotChecked ? 1 : 0;
  }
  if (failures.empty()) {
    TORUS_LOG(Info, Health, "deep check passed", {"seconds", result.seconds},
              {"devices_tested", static_cast<int>(result.devices.size()) - skipped - notChecked},
              {"devices_memory_not_checked", notChecked}, {"devices_in_use", skipped},
              {"links", static_cast<int>(result.links.size())});
  } else {
    TORUS_LOG(Warn, Health, "deep check failed", {"seconds", result.seconds},
              {"failures", static_cast<int>(failures.size())}, {"first", failures.front()},
              {"devices_in_use", skipped});
  }
  // What nothing measured is said, every run: a pass covers only what was checked.
  for (const health::NotChecked& item : result.notChecked) {
    TORUS_LOG(Info, Health, "deep check: part not checked", {"part", item.part}, {"why", item.why});
  }
  // Device transitions (and their reasons) are logged once by the monitor.
  monitor_.reportDeepCheck(result.verdictByDevice());
  {
    std::lock_guard lock(mutex_);
    const std::optional<double> lastSuccess = last_ ? last_->lastSuccessSeconds : std::nullopt;
    const double now = unixNow();
    last_ = metrics::DeepCheckSnapshot{result, now,
                                       failures.empty() ? std::optional<double>(now) : lastSuccess};
    running_ = false;
    ++runsFinished_;
  }
  finished_.notify_all();
  return result;
}

std::optional<metrics::DeepCheckSnapshot> DeepCheckRunner::last() const {
  std::lock_guard lock(mutex_);
  return last_;
}

void DeepCheckRunner::loop(std::stop_token stop) {
  while (!sleepUntilStopped(stop, interval_))
    runNow();
}

}  // namespace torus::agent
