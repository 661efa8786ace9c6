// NodeAgent: the long-running process on every Neuron node. It discovers the node (real or
// simulated), keeps its health fresh (NodeMonitor), serves kubelet's device plugin API for the
// configured resources, and serves /healthz. main.cc only parses config and waits for a signal.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/base/deadline_worker.h"
#include "common/base/result.h"
#include "common/http/http_server.h"
#include "device-plugin/plugin_manager.h"
#include "dra-driver/dra_driver.h"
#include "node-runtime/agent/agent_config.h"
#include "node-runtime/agent/claim_holder_poller.h"
#include "node-runtime/agent/debug_report.h"
#include "node-runtime/agent/deep_check_runner.h"
#include "node-runtime/agent/device_recovery.h"
#include "node-runtime/agent/grant_check.h"
#include "node-runtime/agent/kube/kubelet_view_publisher.h"
#include "node-runtime/agent/kube/node_events.h"
#include "node-runtime/agent/kube/node_publisher.h"
#include "node-runtime/agent/kube/pod_handoff.h"
#include "node-runtime/agent/plugin_node_view.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/health/hardware_error_proof.h"
#include "node-runtime/health/kernel_log.h"
#include "node-runtime/health/node_monitor.h"
#include "node-runtime/metrics/core_tenants.h"
#include "node-runtime/metrics/device_stats.h"
#include "node-runtime/node_source/node_source.h"

namespace torus::agent {

class NodeAgent {
 public:
  static Result<std::unique_ptr<NodeAgent>> start(const AgentConfig& config);

  NodeAgent(node_source::PreparedNode prepared, discovery::Discovery discovery);
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  int adminPort() const { return admin_ ? admin_->port() : 0; }
  health::NodeMonitor& monitor() { return *monitor_; }
  const discovery::Discovery& discovery() const { return discovery_; }
  void stop();

 private:
  Result<void> serveHttp(const std::string& address);
  Result<void> serveAdmin(const std::string& address);
  // node_agent_kernel_log.cc: NEURON_HW_ERR lines are claims, acted on once proven.
  void followKernelLog(const AgentConfig& config);
  void onKernelClaim(health::KernelHardwareError error, const std::string& line);
  // A proven (or, under --kernel-log-trust-reports, trusted) hardware error: out of service,
  // taints with their effect, AWS's conditions.
  void actOnHardwareError(int device, const std::string& type, const std::string& proof);
  // Probes each grant the agent depends on; denials are logged, posted and kept for /readyz.
  void checkGrants(const AgentConfig& config);
  // What GET /allocations answers (allocationsDocument).
  nlohmann::json allocations() const;
  // What GET /metrics answers.
  std::string metricsText();
  // GET /debug[?device=N] on the admin address (debug_report.h).
  http::Response debugResponse(const http::Request& request);
  // Whether any core is held, through either resource or by a process outside kubelet's view.
  bool anyCoreHeld() const;
  topology::DeviceSet devicesInUse() const;
  // How long a reset may take on this node: --reset-timeout, or the driver's limit for its type.
  std::chrono::milliseconds resetLimit(const AgentConfig& config) const;
  // Who holds each core, for the metrics' pod labels.
  metrics::CoreTenants coreTenants(const topology::Node& node) const;
  // The driver's counters for a scrape, read on statsWorker_ for at most kStatsDeadline.
  metrics::NodeStats readStatsBounded(const topology::Node& node);
  Result<void> startDevicePlugin(const AgentConfig& config,
                                 const std::optional<kube::KubeConfig>& kube);
  Result<void> startDra(const AgentConfig& config, const std::optional<kube::KubeConfig>& kube);
  // Before the plugin's sockets close: taint the node, then let the pods bound here meanwhile be
  // admitted while kubelet still counts our devices.
  void drainDevicePlugin();

  node_source::PreparedNode prepared_;
  discovery::Discovery discovery_;
  // Declared in dependency order: destroyed plugins first, then the view, then the monitor.
  std::unique_ptr<health::NodeMonitor> monitor_;
  HardwareErrorLog hardwareErrors_;  // before kernelLog_ and publisher_, which use it
  RecentKernelLines kernelLines_;    // before kernelLog_, which adds to it
  // Confirms claims from the firmware ECC counters; null under --kernel-log-trust-reports.
  std::unique_ptr<health::HardwareErrorProof> hardwareErrorProof_;
  std::vector<std::string> deviceSerials_;    // by device, for the kernel log's serial-num=
  std::vector<std::string> deviceFunctions_;  // by device, its PCI function ("" unknown)
  std::mutex claimEventsMutex_;
  std::map<int, std::chrono::steady_clock::time_point> lastClaimEvent_;  // by device
  std::unique_ptr<health::KernelLogWatcher> kernelLog_;                  // reports into monitor_
  std::string kernelLogError_;                                           // why it is not followed
  std::vector<Grant> grants_;                                            // probed before serving
  std::vector<DeniedGrant> deniedGrants_;
  std::unique_ptr<PluginNodeView> view_;
  std::unique_ptr<PodAnnotationHandoff> handoff_;
  std::unique_ptr<NodePublisher> publisher_;
  std::unique_ptr<NodeEvents> nodeEvents_;  // before plugins_, which post through it
  std::unique_ptr<plugin::DevicePluginManager> plugins_;
  std::unique_ptr<KubeletViewPublisher> kubeletView_;  // what plugins_ told kubelet, on the Node
  // Reads the agent's DaemonSet when it stops (daemonset_successor.h); null without --daemonset.
  std::unique_ptr<kube::KubeClient> successorClient_;
  std::string daemonSet_;
  std::string nodeName_;
  ChangeNotifier::Subscription podEnded_;  // handoff_ -> plugins_
  std::unique_ptr<dra::DraDriver> dra_;
  std::unique_ptr<ClaimHolderPoller> claimHolders_;  // DRA mode: who uses the claims
  std::unique_ptr<DeepCheckRunner> deepCheck_;       // asks plugins_ which devices are in use
  std::unique_ptr<DeviceRecovery> recovery_;         // likewise
  static constexpr std::chrono::seconds kStatsDeadline{2};
  std::mutex statsMutex_;
  DeadlineWorker statsWorker_;  // before http_: a scrape in flight may be using it
  // A debug report's reads of the driver's files, bounded like a scrape's (one at a time).
  static constexpr std::chrono::seconds kDebugReadDeadline{5};
  std::mutex debugMutex_;
  DeadlineWorker debugWorker_;  // before admin_
  std::unique_ptr<http::HttpServer> http_;
  std::unique_ptr<http::HttpServer> admin_;
};

}  // namespace torus::agent
