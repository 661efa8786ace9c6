#include "node-runtime/agent/kube/node_events.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/kube/event_object.h"

namespace torus::agent {

// Short: a caller may be answering kubelet meanwhile.
constexpr std::chrono::seconds kPostTimeout{2};

NodeEvents::NodeEvents(const kube::KubeConfig& config, std::string nodeName)
    : nodeName_(std::move(nodeName)), client_(config, kPostTimeout) {}

void NodeEvents::warn(std::string_view reason, std::string_view message) {
  const nlohmann::json event =
      kube::eventObject({"Node", nodeName_, "", nodeName_}, "default", /*normal=*/false,
                        std::string(reason), std::string(message), "neuron-node-agent", nodeName_);
  std::lock_guard lock(mutex_);
  if (auto posted = client_.create("/api/v1/namespaces/default/events", event); !posted) {
    TORUS_LOG(Warn, Agent, "could not post a node event", {"reason", reason},
              {"error", posted.error().message});
  }
}

}  // namespace torus::agent
