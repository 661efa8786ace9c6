// DevicePluginManager: runs one PluginServer per enabled resource, registers each with kubelet,
// and keeps them registered: when kubelet restarts it wipes the device-plugin directory and
// creates a new kubelet.sock, so an inotify watch on the directory restarts our servers and
// registers again, as does a socket of ours found missing (removed before the watch existed);
// while kubelet is away, registration is retried with backoff (1 s .. 30 s).
// Nothing but our own sockets is ever written into the directory.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "common/base/result.h"
#include "common/kubelet/allocation_window.h"
#include "common/kubelet/node_view.h"
#include "device-plugin/assignments.h"
#include "device-plugin/departed_pods.h"
#include "device-plugin/kubelet_report.h"
#include "device-plugin/plugin_server.h"
#include "device-plugin/pod_resources_poller.h"
#include "device-plugin/release_reset.h"
#include "device-plugin/resource_kind.h"
#include "device-plugin/scheduler_handoff.h"

namespace torus::plugin {

struct DevicePluginOptions {
  std::string pluginDir = "/var/lib/kubelet/device-plugins";
  std::vector<ResourceKind> resources{ResourceKind::kNeuronCore, ResourceKind::kNeuron};
  std::string podResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::chrono::milliseconds podResourcesInterval{2000};
  std::chrono::milliseconds registerTimeout{5000};
  // How long our own Allocate counts as held while kubelet's pod-resources does not list it yet.
  std::chrono::milliseconds allocateGrace{30'000};
  // At start, how long to wait for the agent this one replaces to stop serving our sockets (it
  // drains up to 10 s after tainting its node).
  std::chrono::milliseconds previousAgentWait{30'000};
  // At start, how long kubelet's first pod-resources answer may take before we serve without it.
  std::chrono::milliseconds firstListWait{5'000};
  // Before a container starts, how long its check for a second tenant may wait for kubelet to
  // finish an allocation in flight (pod-resources is not read meanwhile); past it, not checked.
  std::chrono::milliseconds tenantCheckWait{3'000};
  // Posts an Event on this node (reason, message); may be empty.
  std::function<void(std::string_view, std::string_view)> nodeEvent;
  // A pod's UID by namespace/name, and whether a pod of that UID still has processes on the node
  // (departed_pods.h). Without the second, a container may start on the chip of a force-deleted
  // pod whose containers are still being killed.
  DepartedPods::UidOf podUid;
  DepartedPods::StillRuns podStillRuns;
};

// One kubelet.sock, told apart from a later one at the same path.
struct SocketIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  std::int64_t changedSeconds = 0;
  std::int64_t changedNanoseconds = 0;
  bool operator==(const SocketIdentity&) const = default;
};

class DevicePluginManager {
 public:
  // `handoff` (may be null) gives the scheduler extender's choices to GetPreferredAllocation.
  DevicePluginManager(DevicePluginOptions options, kubelet::NodeView& node,
                      SchedulerHandoff* handoff = nullptr);
  ~DevicePluginManager();
  DevicePluginManager(const DevicePluginManager&) = delete;
  DevicePluginManager& operator=(const DevicePluginManager&) = delete;

  // Starts serving and the watch; registration happens in the background (kubelet may be away).
  Result<void> start();
  void stop();
  // Who holds which ids now (kubelet's pod-resources view plus our recent Allocate calls).
  Assignments assignments() const { return tracker_.current(); }
  // What kubelet was last told, per resource.
  KubeletReport& kubeletReport() { return report_; }
  // Runs when assignments() may have changed.
  ChangeNotifier::Subscription onAssignmentsChange(std::function<void()> notify) {
    return tracker_.onChange(std::move(notify));
  }
  // Per resource, the ids kubelet would not give a new pod now: Unhealthy in the last list it
  // has, or held by a container it still counts (pod-resources); nullopt before it has every
  // resource's list and before kubelet's pod-resources has answered (until then the ids its
  // running pods hold are unknown, and saying nothing is held would invite pods it refuses).
  std::optional<contracts::KubeletUnavailable> kubeletUnavailable() const;
  // A pod on this node ended (the API says so): re-read kubelet's assignments at once, so the
  // ids it held through one resource are offered again through the other without a poll's delay.
  void podEnded();

 private:
  void waitForPreviousAgent() const;
  void watch(std::stop_token stop);
  Result<void> restartServers();
  // Every socket we serve is still in the directory (true while we serve none).
  bool ourSocketsServed() const;
  // Registers the kinds not in `registered` yet (adding each kubelet accepts); the identity of
  // the kubelet.sock used once every kind is registered, nullopt while one is not.
  std::optional<SocketIdentity> registerAll(std::set<ResourceKind>& registered);
  // The check that no departed pod still runs on a chip (empty when it cannot be made).
  std::function<Result<void>(const topology::CoreSet&)> departedCheck();

  const DevicePluginOptions options_;
  kubelet::NodeView& node_;
  SchedulerHandoff* handoff_;
  AssignmentTracker tracker_;
  KubeletReport report_;
  kubelet::AllocationWindow window_;
  DepartedPods departed_;
  // Subscribed before resetter_ is made, so a List's departures are recorded before the
  // resetter hears of the cores they freed (subscribers run in the order they subscribed).
  ChangeNotifier::Subscription departures_;
  std::unique_ptr<ReleaseResetter> resetter_;  // before poller_: the poller calls into it
  std::unique_ptr<PodResourcesPoller> poller_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<PluginServer>> servers_;
  std::jthread watcher_;
};

}  // namespace torus::plugin
