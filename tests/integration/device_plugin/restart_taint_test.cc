// The restarting taint a stopping agent leaves on its Node goes only when the next agent's Node
// report is complete: kubelet has its lists AND kubelet's pod-resources has said which ids running
// pods hold. Removed on the lists alone, the extender would read a report that holds nothing and
// bind pods onto ids kubelet counts in use (they fail admission for good).
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/temp_dir.h"
#include "common/contracts/kubelet_view.h"
#include "common/contracts/neuron_names.h"
#include "tests/integration/device_plugin/fake_kubelet.h"
#include "tests/integration/device_plugin/kubelet_bed.h"
#include "tests/integration/kube/fake_api_server.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kCores(contracts::kNeuronCoreResource);
const std::string kDevices(contracts::kNeuronResource);
constexpr const char* kTaint = contracts::kRestartingTaintKey;

TEST(NodeAgentBinary, KeepsTheRestartingTaintUntilKubeletSaysWhatItsPodsHold) {
  KubeletBed bed("agent-taint");
  FakeKubelet& kubelet = *bed.kubelet;
  const std::string& plugins = bed.plugins;
  const std::string& podResources = bed.podResources;
  // A running pod holds device 2, and kubelet cannot answer pod-resources for now.
  kubelet.setPodAssignments({{"ml", "whole", kDevices, {"2"}}});
  kubelet.setListRefused(true);
  FakeApiServer api;
  nlohmann::json node = makeNode("node-a", "trn2.48xlarge");
  node["spec"]["taints"] = nlohmann::json::array({{{"key", kTaint}, {"effect", "NoSchedule"}}});
  api.put("nodes", node);  // as the agent before this one left it
  const std::string kubeconfig = (bed.path() / "kubeconfig").string();
  api.writeKubeconfig(kubeconfig);
  const auto current = [&] { return api.get("nodes", "node-a").value(); };
  const auto tainted = [&] {
    const nlohmann::json taints = current()["spec"]["taints"];
    return taints.is_array() && !taints.empty() && taints[0]["key"] == kTaint;
  };

  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                           "--metrics-addr=127.0.0.1:0", "--device-plugin-dir=" + plugins,
                           "--pod-resources-socket=" + podResources,
                           "--pod-resources-interval=200ms", "--kubeconfig=" + kubeconfig,
                           "--node-name=node-a", "--kernel-log=none"});
  // It serves kubelet all the same (without lists kubelet could admit nothing at all) ...
  ASSERT_TRUE(kubelet.waitForRegistration(kCores, 1, 10s)) << agent.stderrText();
  ASSERT_TRUE(kubelet.waitForDevices(
      kDevices, [](const auto& d) { return d.size() == 16; }, 10s));
  ASSERT_TRUE(eventually(
      [&] { return agent.stderrText().find("keeps the restarting taint") != std::string::npos; },
      10s))
      << agent.stderrText();
  // ... but the node stays tainted, and no report of what kubelet refuses says "nothing held".
  EXPECT_TRUE(tainted());
  EXPECT_FALSE(current()["metadata"]["annotations"].contains("torus.dev/kubelet-unavailable"))
      << current().dump();

  // Kubelet answers: the report names device 2 before the taint goes, and its cores once
  // kubelet's next list of cores calls them Unhealthy.
  kubelet.setListRefused(false);
  ASSERT_TRUE(eventually([&] { return !tainted(); }, 10s)) << agent.stderrText();
  const auto annotation = [&] {
    return current()["metadata"]["annotations"].value("torus.dev/kubelet-unavailable", "");
  };
  EXPECT_NE(annotation().find(R"("aws.amazon.com/neuron":"2")"), std::string::npos) << annotation();
  EXPECT_TRUE(eventually(
      [&] {
        return annotation() ==
               R"({"aws.amazon.com/neuron":"2","aws.amazon.com/neuroncore":"8-11"})";
      },
      5s))
      << annotation();
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(20s), std::optional<int>(0)) << agent.stderrText();
}

// The taint is for the next agent; a node whose DaemonSet will send none must not keep it (helm
// upgrade with the agent off deletes the DaemonSet; a narrower selector drops the node).
TEST(NodeAgentBinary, TaintsOnStopOnlyWhileItsDaemonSetWillSendAnotherAgent) {
  KubeletBed bed("agent-successor");
  FakeKubelet& kubelet = *bed.kubelet;
  const std::string& plugins = bed.plugins;
  const std::string& podResources = bed.podResources;
  FakeApiServer api;
  api.put("nodes", makeNode("node-a", "trn2.48xlarge"));
  const nlohmann::json selecting = {
      {"metadata", {{"name", "torus-node-agent"}, {"namespace", "torus"}}},
      {"spec",
       {{"template",
         {{"spec",
           {{"nodeSelector", {{"node.kubernetes.io/instance-type", "trn2.48xlarge"}}}}}}}}}};
  api.put(kDaemonSets, selecting);
  const std::string kubeconfig = (bed.path() / "kubeconfig").string();
  api.writeKubeconfig(kubeconfig);
  const auto tainted = [&] {
    const nlohmann::json taints = api.get("nodes", "node-a").value()["spec"]["taints"];
    return taints.is_array() && !taints.empty() && taints[0]["key"] == kTaint;
  };
  // One agent's life: serves kubelet, untaints the node, stops.
  const auto serveAndStop = [&](int registration) {
    BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                             "--metrics-addr=127.0.0.1:0", "--device-plugin-dir=" + plugins,
                             "--pod-resources-socket=" + podResources, "--kubeconfig=" + kubeconfig,
                             "--node-name=node-a", "--daemonset=torus/torus-node-agent",
                             "--kernel-log=none"});
    EXPECT_TRUE(kubelet.waitForRegistration(kCores, registration, 10s)) << agent.stderrText();
    EXPECT_TRUE(eventually([&] { return !tainted(); }, 10s)) << agent.stderrText();
    agent.signal(SIGTERM);
    EXPECT_EQ(agent.waitExit(20s), std::optional<int>(0)) << agent.stderrText();
    return agent.stderrText();
  };

  serveAndStop(1);
  EXPECT_TRUE(tainted()) << "the DaemonSet selects the node: the next agent removes the taint";

  // helm upgrade narrows the DaemonSet to other instance types: no agent comes back.
  nlohmann::json narrowed = selecting;
  narrowed["spec"]["template"]["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] =
      "inf2.xlarge";
  api.put(kDaemonSets, narrowed);
  std::string log = serveAndStop(2);
  EXPECT_FALSE(tainted()) << log;
  EXPECT_NE(log.find("leaving the node untainted"), std::string::npos) << log;

  // The DaemonSet is deleted (the agent switched off): the same.
  api.remove(kDaemonSets, "torus/torus-node-agent");
  log = serveAndStop(3);
  EXPECT_FALSE(tainted()) << log;
}

}  // namespace
}  // namespace torus::testing
