// NodeEvents: posts core/v1 Events about this node (in "default", as kubelet's node events are,
// so `kubectl describe node` shows them). Thread-safe; a failed post is logged, never retried:
// an Event is a notice, and the condition it reports is also in the log and the metrics.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

#include "common/kube/kube_client.h"

namespace torus::agent {

class NodeEvents {
 public:
  NodeEvents(const kube::KubeConfig& config, std::string nodeName);
  void warn(std::string_view reason, std::string_view message);

 private:
  const std::string nodeName_;
  std::mutex mutex_;
  kube::KubeClient client_;
};

}  // namespace torus::agent
