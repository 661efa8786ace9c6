// NodeMonitor: keeps the current node model fresh. Sysfs attributes cannot be watched with
// inotify on a real node, so it polls: every interval it re-probes the volatile health signals
// (ECC counters, reset state, device nodes: a few reads per device), and every kFullPassEvery
// intervals it re-runs the whole discovery. When a device's health or the node changes it swaps
// the snapshot, logs each transition with its reason, and notifies subscribers. A device returns
// to Healthy as soon as its cause clears, or — with the recovery gate on (the agent's default) —
// once its cause has cleared and a reset and a self-test have passed (recovery_gate.h).
//
// A changed /opt/aws/neuron/logical_nc_config renumbers every core (LNC 2 -> 1 doubles the ids),
// so while any core is held (the guard says so) the monitor keeps describing the node at the
// LNC it had, reports the change as pending, and applies it once nothing is held: an id a
// running pod holds never comes to mean another core (that would be a physical double allocation).
//
// Every read of the driver's files runs on a DeadlineWorker (one per device, one for the full
// pass) that the monitor waits on for at most `readDeadline`: a read that hangs takes its device
// out of service with the reason and leaves the other devices, the kernel log and shutdown
// unaffected; stalledReads() names what hangs, for /healthz.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/base/change_notifier.h"
#include "common/base/deadline_worker.h"
#include "common/topology/node.h"
#include "node-runtime/discovery/device_scan.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/health/recovery_gate.h"

namespace torus::health {

class NodeMonitor {
 public:
  static constexpr int kFullPassEvery = 20;

  // `kernelErrorHold`: how long a device stays out of service after its last kernel-reported
  // hardware error (hysteresis: a burst of errors does not make it flap).
  NodeMonitor(discovery::DiscoveryRoots roots, discovery::DiscoveryOptions options,
              const discovery::Discovery& initial, std::chrono::milliseconds interval,
              std::chrono::milliseconds kernelErrorHold = std::chrono::minutes(5),
              std::chrono::milliseconds readDeadline = std::chrono::seconds(1));
  ~NodeMonitor();
  NodeMonitor(const NodeMonitor&) = delete;
  NodeMonitor& operator=(const NodeMonitor&) = delete;

  topology::Node node() const;
  std::uint64_t generation() const;
  const discovery::DiscoveryRoots& roots() const { return roots_; }
  ChangeNotifier::Subscription onChange(std::function<void()> notify) {
    return notifier_.subscribe(std::move(notify));
  }
  // Re-runs discovery now; returns whether anything changed.
  bool refresh();
  // Re-probes only the volatile health signals; returns whether anything changed.
  bool refreshHealth();
  // `anyHeld` says whether any core is held now; while it does, an LNC change waits.
  void setLncChangeGuard(std::function<bool()> anyHeld);
  // The LNC the configuration asks for when it differs from the one in force (held back).
  std::optional<int> pendingLnc() const;
  // Reads of the driver's files that have not returned past their deadline, one line each
  // ("neuron12: health attributes, hung since 08:12:03Z"); empty when none hangs.
  std::vector<std::string> stalledReads() const;

  // The kernel log reported a hardware error on `device`: it leaves service now and returns
  // once `kernelErrorHold` passes without another report.
  void reportKernelError(int device, const std::string& type);
  // A deep check's verdict per tested device: a reason takes the device out of service until a
  // later check of that device passes (an empty reason); devices not in the map keep theirs.
  void reportDeepCheck(const std::map<int, std::string>& verdict);

  // A source of health every device depends on (the kernel log) is lost, or works again: while
  // lost, every device's health says so (unknown unless a fault makes it unhealthy).
  void setSourceLost(const std::string& source, const std::string& why);
  void setSourceRestored(const std::string& source);

  // From now on a device that left service returns only through reportRecovery().
  void enableRecoveryGate();
  // Devices whose cause has cleared and that wait for a reset and a self-test.
  topology::DeviceSet awaitingRecovery() const;
  // The outcome of a reset and self-test of `device` (recovery_gate.h), applied at once; on
  // success `checks` names what passed ("reset,self-test"), shown in its health from then on.
  void reportRecovery(int device, const Result<void>& outcome, const std::string& checks = "");

 private:
  void run(std::stop_token stop);
  bool publish(topology::Node next);
  // Marks devices with a kernel-reported error inside the hold window (with mutex_ not held).
  void overlayKernelErrors(topology::Node& next);
  void overlayDeepCheck(topology::Node& next);
  // Both overlays, then the recovery gate, which holds back devices whose cause cleared until
  // they recover; every pass ends with this before publishing.
  void applyOverlays(topology::Node& next);
  // The discovered node, or — when it changes the LNC while cores are held — the node
  // rediscovered at the LNC in force. Updates pendingLnc_ and says whether that changed.
  Result<discovery::Discovery> discoverKeepingHeldLnc(bool& pendingChanged);
  // discoverNode on the discovery worker; nullopt when it has not returned within the deadline.
  std::optional<Result<discovery::Discovery>> discoverBounded(
      const discovery::DiscoveryOptions& options);
  // The device's volatile health on its worker; the problems, or the stall as a problem.
  discovery::VolatileHealth probeBounded(std::size_t device);
  // Records (or clears) a stall under `key` and logs the change; returns the reason text.
  std::string noteStall(const std::string& key, std::optional<DeadlineWorker::Clock::time_point>);

  const discovery::DiscoveryRoots roots_;
  const discovery::DiscoveryOptions options_;
  const std::chrono::milliseconds interval_;
  const std::chrono::milliseconds kernelErrorHold_;
  const std::chrono::milliseconds readDeadline_;
  mutable std::mutex mutex_;
  topology::Node node_;
  std::vector<std::vector<std::string>> staticProblems_;
  std::vector<discovery::VolatileHealthFiles> healthFiles_;  // per device, resolved once
  std::uint64_t generation_ = 1;
  struct KernelError {
    std::chrono::steady_clock::time_point last;
    std::string type;
    int count = 0;
  };
  std::map<int, KernelError> kernelErrors_;       // by device
  std::map<int, std::string> deepCheckFailures_;  // by device: the last failing check's reason
  std::optional<RecoveryGate> recoveryGate_;      // set: devices return only after recovering
  std::map<int, std::string> recoveredWith_;      // by device: the checks of its last return
  std::function<bool()> lncGuard_;
  std::optional<int> pendingLnc_;
  std::map<std::string, std::string> stalls_;       // what hangs -> since when (UTC)
  std::map<std::string, std::string> lostSources_;  // node-wide source -> why it is lost
  ChangeNotifier notifier_;
  std::mutex refreshMutex_;
  // Before the monitor's thread, so they outlive it; a stuck one detaches when destroyed.
  std::vector<std::unique_ptr<DeadlineWorker>> probeWorkers_;  // by device
  DeadlineWorker discoveryWorker_;
  std::jthread thread_;
};

}  // namespace torus::health
