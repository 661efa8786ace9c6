#include "node-runtime/health/node_monitor.h"

#include <algorithm>

#include "common/base/log.h"
#include "common/base/sleep_until_stopped.h"
#include "common/base/strings.h"
#include "common/base/utc_time.h"
#include "common/contracts/agent_metrics.h"
#include "common/metrics/event_counters.h"
#include "node-runtime/discovery/device_scan.h"

namespace torus::health {
namespace {

bool sameNode(const topology::Node& a, const topology::Node& b) {
  if (a.deviceCount() != b.deviceCount() || a.lnc != b.lnc) return false;
  for (std::size_t i = 0; i < a.devices.size(); ++i) {
    const topology::Device& x = a.devices[i];
    const topology::Device& y = b.devices[i];
    if (x.health != y.health || x.connected != y.connected) return false;
  }
  return true;
}

void logTransitions(const topology::Node& before, const topology::Node& after) {
  using topology::HealthState;
  for (std::size_t i = 0; i < after.devices.size() && i < before.devices.size(); ++i) {
    const auto& was = before.devices[i].health;
    const auto& now = after.devices[i].health;
    const HealthState from = was.state();
    const HealthState to = now.state();
    if (from != to) {
      metrics::processCounters().add(
          metrics::names::kHealthTransitionsTotal,
          {{contracts::agent_metrics::kDeviceIndexLabel, std::to_string(i)},
           {"to", std::string(stateName(to))}});
    }
    if (was.healthy && !now.healthy) {
      TORUS_LOG(Warn, Health, "device unhealthy", {"device", static_cast<int>(i)},
                {"reason", now.reason});
    } else if (!was.healthy && now.healthy) {
      TORUS_LOG(Info, Health, "device healthy again", {"device", static_cast<int>(i)},
                {"previous_reason", was.reason});
    } else if (!now.healthy && was.reason != now.reason) {
      TORUS_LOG(Warn, Health, "device still unhealthy, new reason", {"device", static_cast<int>(i)},
                {"reason", now.reason});
    }
    if (was.unmonitored != now.unmonitored) {
      if (now.unmonitored.empty()) {
        TORUS_LOG(Info, Health, "device monitored again", {"device", static_cast<int>(i)});
      } else {
        TORUS_LOG(Warn, Health, "device health unknown: a source of its health is lost",
                  {"device", static_cast<int>(i)},
                  {"unmonitored", joinStrings(now.unmonitored, "; ")});
      }
    }
  }
}

}  // namespace

NodeMonitor::NodeMonitor(discovery::DiscoveryRoots roots, discovery::DiscoveryOptions options,
                         const discovery::Discovery& initial, std::chrono::milliseconds interval,
                         std::chrono::milliseconds kernelErrorHold,
                         std::chrono::milliseconds readDeadline)
    : roots_(std::move(roots)),
      options_(std::move(options)),
      interval_(interval),
      kernelErrorHold_(kernelErrorHold),
      readDeadline_(readDeadline),
      node_(initial.node),
      staticProblems_(initial.staticProblems) {
  for (const topology::Device& device : node_.devices) {
    healthFiles_.push_back(discovery::volatileHealthFiles(roots_, device.index));
    probeWorkers_.push_back(std::make_unique<DeadlineWorker>());
  }
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

NodeMonitor::~NodeMonitor() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

topology::Node NodeMonitor::node() const {
  std::lock_guard lock(mutex_);
  return node_;
}

std::uint64_t NodeMonitor::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

void NodeMonitor::setLncChangeGuard(std::function<bool()> anyHeld) {
  std::lock_guard lock(mutex_);
  lncGuard_ = std::move(anyHeld);
}

std::optional<int> NodeMonitor::pendingLnc() const {
  std::lock_guard lock(mutex_);
  return pendingLnc_;
}

std::string NodeMonitor::noteStall(const std::string& key,
                                   std::optional<DeadlineWorker::Clock::time_point> since) {
  std::lock_guard lock(mutex_);
  const auto it = stalls_.find(key);
  if (!since) {
    if (it != stalls_.end()) {
      TORUS_LOG(Info, Health, "a hung read of the driver's files returned", {"what", key},
                {"since", it->second});
      stalls_.erase(it);
    }
    return "";
  }
  if (it != stalls_.end()) return it->second;
  // Wall-clock start, fixed once, so the reason (and the node) does not change every pass.
  const auto age = DeadlineWorker::Clock::now() - *since;
  const std::string at =
      utcRfc3339(std::chrono::system_clock::now() -
                 std::chrono::duration_cast<std::chrono::system_clock::duration>(age));
  TORUS_LOG(Error, Health, "a read of the driver's files hangs; going on without it", {"what", key},
            {"since", at}, {"deadline_ms", static_cast<std::int64_t>(readDeadline_.count())});
  stalls_[key] = at;
  return at;
}

std::vector<std::string> NodeMonitor::stalledReads() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> lines;
  for (const auto& [key, since] : stalls_)
    lines.push_back(key + ", hung since " + since);
  return lines;
}

std::optional<Result<discovery::Discovery>> NodeMonitor::discoverBounded(
    const discovery::DiscoveryOptions& options) {
  // The task owns copies of what it reads: it may outlive this call, and even this object.
  auto out = std::make_shared<std::optional<Result<discovery::Discovery>>>();
  const bool done = discoveryWorker_.run(
      [out, roots = roots_, options] { out->emplace(discovery::discoverNode(roots, options)); },
      readDeadline_);
  noteStall("full discovery pass", done ? std::nullopt : discoveryWorker_.stuckSince());
  if (!done) return std::nullopt;
  return std::move(*out);
}

discovery::VolatileHealth NodeMonitor::probeBounded(std::size_t device) {
  auto out = std::make_shared<discovery::VolatileHealth>();
  const bool done = probeWorkers_[device]->run(
      [out, files = healthFiles_[device]] { *out = discovery::probeVolatileHealth(files); },
      readDeadline_);
  const std::string key = "neuron" + std::to_string(device) + ": health attributes";
  const std::string since =
      noteStall(key, done ? std::nullopt : probeWorkers_[device]->stuckSince());
  if (done) return std::move(*out);
  // A read that hangs is the driver failing the device, not a source the agent lost.
  discovery::VolatileHealth hung;
  hung.problems.push_back({topology::HealthDimension::kDeviceLost, "ReadHung",
                           "reading its health attributes has not returned since " + since +
                               " (a hung driver attribute?)"});
  return hung;
}

Result<discovery::Discovery> NodeMonitor::discoverKeepingHeldLnc(bool& pendingChanged) {
  pendingChanged = false;
  auto bounded = discoverBounded(options_);
  if (!bounded) {
    return makeError(ErrorCode::kDeadlineExceeded, "the full discovery pass has hung");
  }
  auto found = std::move(*bounded);
  std::function<bool()> guard;
  int inForce = 0;
  std::optional<int> pending;
  {
    std::lock_guard lock(mutex_);
    guard = lncGuard_;
    inForce = node_.lnc;
    pending = pendingLnc_;
  }
  std::optional<int> nowPending;
  if (found && found->node.lnc != inForce && inForce > 0 && guard && guard()) {
    discovery::DiscoveryOptions held = options_;
    held.lnc = inForce;
    if (auto atHeldLnc = discoverBounded(held); atHeldLnc && *atHeldLnc) {
      nowPending = found->node.lnc;
      found = std::move(*atHeldLnc);
    }
  }
  pendingChanged = nowPending != pending;
  if (pendingChanged) {
    if (nowPending) {
      TORUS_LOG(Warn, Discovery,
                "the logical NeuronCore config changed while cores are held; keeping the LNC in "
                "force until no pod holds a core (the change renumbers every core)",
                {"lnc_in_force", inForce}, {"lnc_asked", *nowPending});
    } else if (pending && found && found->node.lnc == *pending) {
      TORUS_LOG(Info, Discovery,
                "applying the logical NeuronCore config change now that no core is held",
                {"lnc", found->node.lnc}, {"was", inForce});
    } else if (pending) {
      TORUS_LOG(Info, Discovery, "the pending logical NeuronCore config change was withdrawn",
                {"lnc", inForce});
    }
    std::lock_guard lock(mutex_);
    pendingLnc_ = nowPending;
  }
  return found;
}

bool NodeMonitor::refresh() {
  std::lock_guard refreshing(refreshMutex_);
  bool pendingChanged = false;
  auto found = discoverKeepingHeldLnc(pendingChanged);
  // A hung pass changes nothing; the per-device probes go on and name what hangs.
  if (!found && found.error().code == ErrorCode::kDeadlineExceeded) return false;
  topology::Node next;
  if (found) {
    {
      std::lock_guard lock(mutex_);
      staticProblems_ = found->staticProblems;
    }
    next = std::move(found->node);
  } else {
    // The driver vanished or its class directory is unreadable: keep the last model, but take
    // every device out of service with the reason until discovery works again.
    next = node();
    for (auto& device : next.devices) {
      device.health = topology::DeviceHealth::unhealthy(
          topology::HealthDimension::kDeviceLost, "DiscoveryFailed",
          "discovery failed: " + found.error().message);
    }
  }
  applyOverlays(next);
  const bool changed = publish(std::move(next));
  if (pendingChanged && !changed) notifier_.notify();  // the publisher shows what is pending
  return changed || pendingChanged;
}

bool NodeMonitor::refreshHealth() {
  std::lock_guard refreshing(refreshMutex_);
  topology::Node next = node();
  std::vector<std::vector<std::string>> staticProblems;
  {
    std::lock_guard lock(mutex_);
    staticProblems = staticProblems_;
  }
  const std::size_t probed =
      std::min({next.devices.size(), staticProblems.size(), healthFiles_.size()});
  for (std::size_t i = 0; i < probed; ++i) {
    // Rebuilt whole every pass (the overlays add to it), static problems as the last full pass
    // found them.
    next.devices[i].health = discovery::deviceHealthOf(staticProblems[i], probeBounded(i));
  }
  applyOverlays(next);
  return publish(std::move(next));
}

void NodeMonitor::reportKernelError(int device, const std::string& type) {
  {
    std::lock_guard lock(mutex_);
    KernelError& error = kernelErrors_[device];
    error.last = std::chrono::steady_clock::now();
    error.type = type;
    ++error.count;
  }
  refreshHealth();
}

void NodeMonitor::overlayKernelErrors(topology::Node& next) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  std::erase_if(kernelErrors_,
                [&](const auto& entry) { return now - entry.second.last > kernelErrorHold_; });
  for (const auto& [device, error] : kernelErrors_) {
    if (device < 0 || device >= next.deviceCount()) continue;
    topology::DeviceHealth& health = next.devices[static_cast<std::size_t>(device)].health;
    const std::string reason =
        "kernel log NEURON_HW_ERR=" + error.type + " (" + std::to_string(error.count) +
        " reported; back in service " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kernelErrorHold_).count()) +
        " s after the last)";
    health.add(
        {topology::HealthDimension::kHardwareError, topology::healthCode(error.type), reason});
  }
}

void NodeMonitor::reportDeepCheck(const std::map<int, std::string>& verdict) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& [device, reason] : verdict) {
      if (reason.empty()) {
        deepCheckFailures_.erase(device);
      } else {
        deepCheckFailures_[device] = reason;
      }
    }
  }
  refreshHealth();
}

void NodeMonitor::overlayDeepCheck(topology::Node& next) {
  std::lock_guard lock(mutex_);
  for (const auto& [device, reason] : deepCheckFailures_) {
    if (device < 0 || device >= next.deviceCount()) continue;
    topology::DeviceHealth& health = next.devices[static_cast<std::size_t>(device)].health;
    health.add({topology::HealthDimension::kDeepCheck, "Failed", reason});
  }
}

void NodeMonitor::enableRecoveryGate() {
  {
    std::lock_guard lock(mutex_);
    if (recoveryGate_) return;
    recoveryGate_.emplace();
  }
  refreshHealth();
}

void NodeMonitor::applyOverlays(topology::Node& next) {
  overlayKernelErrors(next);
  overlayDeepCheck(next);
  std::lock_guard lock(mutex_);
  if (recoveryGate_) recoveryGate_->apply(next);
  for (const auto& [device, checks] : recoveredWith_) {
    if (device >= 0 && device < next.deviceCount())
      next.devices[static_cast<std::size_t>(device)].health.recoveredWith = checks;
  }
  // Last: a pass that starts from the published node must not repeat the node-wide sources.
  for (topology::Device& device : next.devices) {
    for (const auto& [source, why] : lostSources_) {
      const std::string line = source + ": " + why;
      auto& unmonitored = device.health.unmonitored;
      if (std::find(unmonitored.begin(), unmonitored.end(), line) == unmonitored.end())
        unmonitored.push_back(line);
    }
  }
}

void NodeMonitor::setSourceLost(const std::string& source, const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    if (lostSources_[source] == why) return;
    lostSources_[source] = why;
  }
  refreshHealth();
}

void NodeMonitor::setSourceRestored(const std::string& source) {
  {
    std::lock_guard lock(mutex_);
    if (lostSources_.erase(source) == 0) return;
  }
  refreshHealth();
}

topology::DeviceSet NodeMonitor::awaitingRecovery() const {
  std::lock_guard lock(mutex_);
  return recoveryGate_ ? recoveryGate_->waiting() : topology::DeviceSet();
}

void NodeMonitor::reportRecovery(int device, const Result<void>& outcome,
                                 const std::string& checks) {
  {
    std::lock_guard lock(mutex_);
    if (!recoveryGate_) return;
    recoveryGate_->record(device, outcome);
    if (outcome && !checks.empty()) recoveredWith_[device] = checks;
  }
  refreshHealth();
}

bool NodeMonitor::publish(topology::Node next) {
  {
    std::lock_guard lock(mutex_);
    if (sameNode(node_, next)) return false;
    logTransitions(node_, next);
    node_ = std::move(next);
    ++generation_;
  }
  notifier_.notify();
  return true;
}

void NodeMonitor::run(std::stop_token stop) {
  for (int pass = 1; !sleepUntilStopped(stop, interval_); ++pass) {
    if (pass % kFullPassEvery == 0) {
      refresh();
    } else {
      refreshHealth();
    }
  }
}

}  // namespace torus::health
