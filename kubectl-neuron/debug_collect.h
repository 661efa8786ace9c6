// Collects what `kubectl neuron debug` archives (debug_bundle.h), with the caller's kubeconfig
// and nothing else: the agent's report by running `neuron-node-agent debug` in the node's agent
// pod (pods/exec: Kubernetes authorizes it, and the agent's admin address never leaves its pod),
// the agent's log (pods/log), and the Node, its events, its pods, claims and slices.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/base/result.h"
#include "common/kube/kube_config.h"
#include "kubectl-neuron/agent_pods.h"
#include "kubectl-neuron/debug_bundle.h"

namespace torus::kubectl_neuron {

struct DebugOptions {
  std::string node;
  std::optional<int> device;
  std::string agentSelector = contracts::kAgentSelector;
  std::string agentNamespace = kDefaultAgentNamespace;
  int logLines = 5000;
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

// An error only when the node is not there (nothing to collect); any other part that cannot be
// had is carried in DebugInputs with its reason.
Result<DebugInputs> collectDebugInputs(const kube::KubeConfig& config, const DebugOptions& options);

}  // namespace torus::kubectl_neuron
