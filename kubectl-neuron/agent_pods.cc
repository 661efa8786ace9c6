#include "kubectl-neuron/agent_pods.h"

#include <set>

#include "common/base/strings.h"
#include "common/kube/object_fields.h"

namespace torus::kubectl_neuron {
namespace {

using nlohmann::json;

// The UID of the DaemonSet that controls `pod`, "" when its controller is anything else.
std::string controllingDaemonSet(const json& pod) {
  for (const json& owner : kube::arrayAt(pod, {"metadata", "ownerReferences"})) {
    const json& controller = kube::fieldAt(owner, {"controller"});
    if (!controller.is_boolean() || !controller.get<bool>()) continue;
    if (kube::stringAt(owner, {"kind"}) != "DaemonSet" ||
        kube::stringAt(owner, {"apiVersion"}) != "apps/v1") {
      return "";
    }
    return kube::stringAt(owner, {"uid"});
  }
  return "";
}

}  // namespace

AgentPods trustedAgentPods(const json& podList, const json& daemonSetList,
                           const std::string& agentNamespace) {
  std::set<std::string> daemonSets;
  for (const json& daemonSet : kube::arrayAt(daemonSetList, {"items"})) {
    if (kube::stringAt(daemonSet, {"metadata", "namespace"}) != agentNamespace) continue;
    if (const std::string uid = kube::stringAt(daemonSet, {"metadata", "uid"}); !uid.empty())
      daemonSets.insert(uid);
  }
  AgentPods agents;
  for (const json& pod : kube::arrayAt(podList, {"items"})) {
    const std::string nameSpace = kube::stringAt(pod, {"metadata", "namespace"});
    const std::string key = nameSpace + "/" + kube::stringAt(pod, {"metadata", "name"});
    if (nameSpace != agentNamespace) {
      agents.refused.push_back(key + ": not in the agent namespace " + agentNamespace);
      continue;
    }
    const std::string owner = controllingDaemonSet(pod);
    if (owner.empty() || !daemonSets.contains(owner)) {
      agents.refused.push_back(key + ": not controlled by a DaemonSet of " + agentNamespace);
      continue;
    }
    if (kube::stringAt(pod, {"status", "phase"}) != "Running") continue;
    agents.pods.push_back(pod);
  }
  return agents;
}

Result<AgentPods> listAgentPods(kube::KubeClient& api, const std::string& agentNamespace,
                                const std::string& selector, const std::string& node) {
  std::string query = "?labelSelector=" + percentEncoded(selector);
  if (!node.empty()) query += "&fieldSelector=" + percentEncoded("spec.nodeName=" + node);
  const std::string in = "/namespaces/" + percentEncoded(agentNamespace);
  auto pods = api.get("/api/v1" + in + "/pods" + query);
  if (!pods) {
    return std::move(pods).error().withContext("listing the node agent pods in " + agentNamespace);
  }
  auto daemonSets = api.get("/apis/apps/v1" + in + "/daemonsets");
  if (!daemonSets) {
    return std::move(daemonSets)
        .error()
        .withContext("listing the DaemonSets of " + agentNamespace +
                     " (an agent pod must be one of theirs)");
  }
  return trustedAgentPods(*pods, *daemonSets, agentNamespace);
}

}  // namespace torus::kubectl_neuron
