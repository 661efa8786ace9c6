// NodePublisher: keeps the agent's labels, the torus.dev/topology annotation, the NeuronHealthy
// condition and AWS's health conditions (aws_health.h) on this node's Node object equal to what
// the monitor and the kernel log say. It patches only the keys that changed (a JSON merge-patch
// of single keys; never a replaced map), removes keys it owns that no longer apply, sets
// conditions with a strategic merge patch keyed by type so other conditions stay (and a
// condition's lastTransitionTime moves only when its status does), never touches a label it does
// not own (HyperPod's sagemaker.amazonaws.com/node-health-status included), and retries with
// backoff when the API server is away.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/kube/kube_client.h"
#include "node-runtime/agent/rules/aws_health.h"
#include "node-runtime/agent/rules/node_metadata.h"
#include "node-runtime/health/node_monitor.h"

namespace torus::agent {

class NodePublisher {
 public:
  // `errors`: the kernel log's hardware errors, for AWS's conditions; null when the kernel log is
  // not followed, and then those conditions are not set.
  NodePublisher(const kube::KubeConfig& config, std::string nodeName, health::NodeMonitor& monitor,
                HardwareErrorLog* errors = nullptr, AwsHealthOptions aws = {});
  ~NodePublisher();
  NodePublisher(const NodePublisher&) = delete;
  NodePublisher& operator=(const NodePublisher&) = delete;

  // How many times the node was patched successfully (for tests and metrics).
  std::uint64_t publishes() const;

 private:
  void run(std::stop_token stop);
  // Publishes what is wanted now; `changesAt` gets when the conditions change by themselves.
  Result<void> publish(const NodeMetadata& wanted,
                       std::optional<std::chrono::steady_clock::time_point>& changesAt);
  Result<void> publishConditions(const std::vector<NodeCondition>& wanted);
  Result<void> forgetStaleKeys();
  // A Node Event when an LNC change is first held back, and when it is applied.
  void postLncEvent(int lnc, std::optional<int> pendingLnc);

  kube::KubeClient client_;
  const std::string nodeName_;
  health::NodeMonitor& monitor_;
  HardwareErrorLog* errors_;
  const AwsHealthOptions aws_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  bool dirty_ = true;
  std::uint64_t publishes_ = 0;
  // What the node carries now, as far as we know (after forgetStaleKeys, our last patch).
  std::map<std::string, std::string> labels_;
  std::map<std::string, std::string> annotations_;
  // Our condition types as the node carries them (read at start, then our last patch).
  std::map<std::string, NodeCondition> conditions_;
  std::optional<NodeCondition> inheritedNeuronHealth_;  // set during this boot, before a restart
  bool stalesForgotten_ = false;
  std::optional<int> lastPendingLnc_;
  ChangeNotifier::Subscription subscription_;
  ChangeNotifier::Subscription errorSubscription_;
  std::jthread thread_;
};

}  // namespace torus::agent
