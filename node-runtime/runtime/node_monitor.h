// NodeMonitor: keeps the current node model fresh. It re-runs discovery every interval (sysfs
// attributes cannot be watched with inotify on a real node), and when a device's health or the
// node changes it swaps the snapshot, logs each transition with its reason, and notifies
// subscribers — so a device returns to Healthy as soon as its cause clears.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "common/base/change_notifier.h"
#include "common/topology/node.h"
#include "node-runtime/discovery/discover_node.h"

namespace torus::runtime {

class NodeMonitor {
 public:
  NodeMonitor(discovery::DiscoveryRoots roots, discovery::DiscoveryOptions options,
              topology::Node initial, std::chrono::milliseconds interval);
  ~NodeMonitor();
  NodeMonitor(const NodeMonitor&) = delete;
  NodeMonitor& operator=(const NodeMonitor&) = delete;

  topology::Node node() const;
  std::uint64_t generation() const;
  const discovery::DiscoveryRoots& roots() const { return roots_; }
  ChangeNotifier::Subscription onChange(std::function<void()> notify) {
    return notifier_.subscribe(std::move(notify));
  }
  // Re-reads now (tests, and after a reset); returns whether anything changed.
  bool refresh();

 private:
  void run(std::stop_token stop);

  const discovery::DiscoveryRoots roots_;
  const discovery::DiscoveryOptions options_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  topology::Node node_;
  std::uint64_t generation_ = 1;
  ChangeNotifier notifier_;
  std::mutex refreshMutex_;
  std::jthread thread_;
};

}  // namespace torus::runtime
