// Which pods are Torus's node agents, for the verbs that read what an agent says (`kubectl neuron
// top` reads its metrics, `debug` runs its report and archives it as evidence). A label is not
// enough: any tenant may label a pod of its own. An agent is a Running pod of the namespace Torus
// is installed in (--agent-namespace), carrying the agent's label, whose controller is a DaemonSet
// of that same namespace — where only the cluster's administrators make pods.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/contracts/node_agent_pods.h"  // the chart's agent selector
#include "common/kube/kube_client.h"

namespace torus::kubectl_neuron {

// The namespace the chart's install instructions use (docs/install.md).
inline constexpr const char* kDefaultAgentNamespace = "kube-system";

struct AgentPods {
  std::vector<nlohmann::json> pods;  // the agents, as the API returned them
  // "namespace/name: why" for each labelled pod that is not taken as an agent.
  std::vector<std::string> refused;
};

// The agents among `podList` (a PodList), given the DaemonSets of `agentNamespace`
// (`daemonSetList`, a DaemonSetList). Pure: the verbs' listing is in listAgentPods.
AgentPods trustedAgentPods(const nlohmann::json& podList, const nlohmann::json& daemonSetList,
                           const std::string& agentNamespace);

// Lists the labelled pods of `agentNamespace` (only those on `node` when it is not empty) and the
// namespace's DaemonSets, and keeps the agents. An error names what could not be listed.
Result<AgentPods> listAgentPods(kube::KubeClient& api, const std::string& agentNamespace,
                                const std::string& selector, const std::string& node);

}  // namespace torus::kubectl_neuron
