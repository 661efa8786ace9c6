// NodePublisher: keeps the agent's labels, the torus.dev/topology annotation and the
// NeuronHealthy condition on this node's Node object equal to what the monitor sees. It patches
// only the keys that changed (a JSON merge-patch of single keys; never a replaced map), removes
// keys it owns that no longer apply, sets the condition with a strategic merge patch so other
// conditions stay, and retries with backoff when the API server is away.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/kube/kube_client.h"
#include "node-runtime/agent/node_metadata.h"
#include "node-runtime/runtime/node_monitor.h"

namespace torus::agent {

class NodePublisher {
 public:
  NodePublisher(const kube::KubeConfig& config, std::string nodeName,
                runtime::NodeMonitor& monitor);
  ~NodePublisher();
  NodePublisher(const NodePublisher&) = delete;
  NodePublisher& operator=(const NodePublisher&) = delete;

  // How many times the node was patched successfully (for tests and metrics).
  std::uint64_t publishes() const;

 private:
  void run(std::stop_token stop);
  Result<void> publish(const NodeMetadata& wanted);
  Result<void> forgetStaleKeys();
  // A Node Event when an LNC change is first held back, and when it is applied.
  void postLncEvent(int lnc, std::optional<int> pendingLnc);

  kube::KubeClient client_;
  const std::string nodeName_;
  runtime::NodeMonitor& monitor_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  bool dirty_ = true;
  std::uint64_t publishes_ = 0;
  // What the node carries now, as far as we know (after forgetStaleKeys, our last patch).
  std::map<std::string, std::string> labels_;
  std::map<std::string, std::string> annotations_;
  std::optional<std::pair<bool, std::string>> condition_;  // healthy, message
  bool stalesForgotten_ = false;
  std::optional<int> lastPendingLnc_;
  ChangeNotifier::Subscription subscription_;
  std::jthread thread_;
};

}  // namespace torus::agent
