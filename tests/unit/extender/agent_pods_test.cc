// Which pods `kubectl neuron top` and `debug` take as Torus's node agents: a label is anyone's to
// set, so only a pod of the agent namespace that one of its DaemonSets controls is one.
#include "kubectl-neuron/agent_pods.h"

#include <gtest/gtest.h>

namespace torus::kubectl_neuron {
namespace {

using nlohmann::json;

json daemonSet(const std::string& nameSpace, const std::string& uid) {
  return {{"metadata", {{"namespace", nameSpace}, {"name", "torus-node-agent"}, {"uid", uid}}}};
}

json labelledPod(const std::string& nameSpace, const std::string& name, json owners) {
  return {{"metadata",
           {{"namespace", nameSpace},
            {"name", name},
            {"labels", {{"app.kubernetes.io/component", "node-agent"}}},
            {"ownerReferences", std::move(owners)}}},
          {"spec", {{"nodeName", "node-1"}}},
          {"status", {{"phase", "Running"}}}};
}

json ownedBy(const std::string& kind, const std::string& uid, bool controller = true) {
  return json::array({{{"apiVersion", "apps/v1"},
                       {"kind", kind},
                       {"name", "owner"},
                       {"uid", uid},
                       {"controller", controller}}});
}

std::vector<std::string> namesOf(const AgentPods& agents) {
  std::vector<std::string> names;
  for (const json& pod : agents.pods)
    names.push_back(pod["metadata"]["namespace"].get<std::string>() + "/" +
                    pod["metadata"]["name"].get<std::string>());
  return names;
}

// A tenant's labelled pod in a namespace that sorts first is not the agent; the chart's is.
TEST(AgentPods, ALabelledPodOutsideTheAgentNamespaceIsNotTheAgent) {
  const json pods = {{"items",
                      {labelledPod("a", "fake", ownedBy("DaemonSet", "tenant-ds")),
                       labelledPod("kube-system", "agent", ownedBy("DaemonSet", "torus-ds"))}}};
  const json daemonSets = {{"items", {daemonSet("kube-system", "torus-ds")}}};
  const AgentPods agents = trustedAgentPods(pods, daemonSets, "kube-system");
  EXPECT_EQ(namesOf(agents), std::vector<std::string>{"kube-system/agent"});
  ASSERT_EQ(agents.refused.size(), 1u);
  EXPECT_EQ(agents.refused[0], "a/fake: not in the agent namespace kube-system");
}

// In the agent namespace too, only a DaemonSet of it makes a pod the agent: not a bare pod, not
// another controller, not an owner reference that names a DaemonSet that is not there, not an
// owner that is not the controller.
TEST(AgentPods, InTheAgentNamespaceOnlyAPodItsDaemonSetControlsIsTheAgent) {
  const json pods = {
      {"items",
       {labelledPod("torus", "bare", json::array()),
        labelledPod("torus", "by-replicaset", ownedBy("ReplicaSet", "rs")),
        labelledPod("torus", "names-a-stranger", ownedBy("DaemonSet", "other-namespace-ds")),
        labelledPod("torus", "not-controller", ownedBy("DaemonSet", "torus-ds", false)),
        labelledPod("torus", "agent", ownedBy("DaemonSet", "torus-ds"))}}};
  const json daemonSets = {
      {"items", {daemonSet("torus", "torus-ds"), daemonSet("other", "other-namespace-ds")}}};
  const AgentPods agents = trustedAgentPods(pods, daemonSets, "torus");
  EXPECT_EQ(namesOf(agents), std::vector<std::string>{"torus/agent"});
  EXPECT_EQ(agents.refused.size(), 4u);
  for (const std::string& refused : agents.refused)
    EXPECT_NE(refused.find(": not controlled by a DaemonSet of torus"), std::string::npos)
        << refused;
}

TEST(AgentPods, APodThatIsNotRunningIsNoAgentToAsk) {
  json pending = labelledPod("kube-system", "starting", ownedBy("DaemonSet", "torus-ds"));
  pending["status"]["phase"] = "Pending";
  const AgentPods agents = trustedAgentPods(
      {{"items", {pending}}}, {{"items", {daemonSet("kube-system", "torus-ds")}}}, "kube-system");
  EXPECT_TRUE(agents.pods.empty());
  EXPECT_TRUE(agents.refused.empty());
}

TEST(AgentPods, ListsThatAreNotListsGiveNoAgent) {
  const AgentPods agents = trustedAgentPods(json("not a list"), json::array(), "kube-system");
  EXPECT_TRUE(agents.pods.empty());
}

}  // namespace
}  // namespace torus::kubectl_neuron
