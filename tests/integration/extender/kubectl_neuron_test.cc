// kubectl-neuron against the API-server stand-in: the same state the extender derives from pods,
// as tables, drawings and JSON, and clear errors for a missing node or kubeconfig.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/stat.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "tests/integration/device_plugin/fake_kubelet.h"
#include "tests/integration/kube/fake_api_server.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using nlohmann::json;

class KubectlNeuronTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("kubectl-neuron");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    kubeconfig_ = (dir_->path() / "kubeconfig").string();
    api_.writeKubeconfig(kubeconfig_);
    api_.put("nodes", makeNode("trn-a", "trn2.48xlarge"));
    json ring = makeNode("inf-b", "inf2.48xlarge");
    ring["metadata"]["annotations"]["torus.dev/topology"] =
        R"({"v":1,"lnc":1,"devices":12,"coresPerDevice":2,"unhealthy":[11]})";
    api_.put("nodes", ring);
    api_.put("nodes", makeNode("cpu", "m5.large"));
    bound("train", "aws.amazon.com/neuron", 8, "trn-a", "0,1,2,3,4,5,6,7", "true");
    bound("infer", "aws.amazon.com/neuroncore", 2, "trn-a", "32,33", "false");
    bound("ring", "aws.amazon.com/neuron", 4, "inf-b", "0,1,2,3", "true");
    api_.put("pods", makePod("other", "waiting", "aws.amazon.com/neuroncore", 4));
    api_.put("pods", makePod("other", "cpu-only", "example.com/none", 1));
  }
  void bound(const std::string& name, const std::string& resource, int count,
             const std::string& node, const std::string& ids, const std::string& allocated) {
    json pod = makePod("ml", name, resource, count);
    pod["spec"]["nodeName"] = node;
    pod["status"]["phase"] = "Running";
    pod["metadata"]["annotations"]["AWS_NEURON_IDS"] = ids;
    pod["metadata"]["annotations"]["NEURON_ALLOCATED"] = allocated;
    api_.put("pods", pod);
  }
  ProcessResult run(std::vector<std::string> args) {
    args.insert(args.begin(), {binaryPath("kubectl-neuron"), "--kubeconfig=" + kubeconfig_});
    return runProcess(args);
  }

  FakeApiServer api_;
  std::unique_ptr<TempDir> dir_;
  std::string kubeconfig_;
};

TEST_F(KubectlNeuronTest, NodesTableAndJson) {
  const ProcessResult table = run({"nodes"});
  ASSERT_EQ(table.exitCode, 0) << table.err;
  EXPECT_TRUE(table.err.empty()) << table.err;
  // trn-a: 8 devices (32 cores) + 2 cores of device 8 used; 7 devices fully free, but every
  // 8-device half of the torus touches a used device, so a row of 4 is the largest free shape.
  // inf-b: devices 0-3 held, 11 out of service: a run of 7 is left.
  EXPECT_NE(table.out.find("| trn-a | trn2.48xlarge | 2   | 34/64 | 7/16    | 4 devices"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("| inf-b | inf2.48xlarge | 1   | 8/24  | 7/12    | 7 devices"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("unhealthy 11"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("cpu"), std::string::npos) << "not a Neuron node";

  const ProcessResult asJson = run({"nodes", "--json"});
  ASSERT_EQ(asJson.exitCode, 0) << asJson.err;
  const json nodes = json::parse(asJson.out);
  ASSERT_EQ(nodes.size(), 2U);
  EXPECT_EQ(nodes[0]["name"], "inf-b");
  EXPECT_EQ(nodes[0]["devices"]["unhealthy"], json({11}));
  EXPECT_EQ(nodes[0]["cores"]["used"], 8);
  EXPECT_EQ(nodes[1]["name"], "trn-a");
  EXPECT_EQ(nodes[1]["cores"]["used"], 34);
  EXPECT_EQ(nodes[1]["largestFreeDevices"], 4);
  EXPECT_EQ(nodes[1]["allocations"].size(), 2U);
}

TEST_F(KubectlNeuronTest, NodeDrawsTheTorusWithItsPods) {
  const ProcessResult drawn = run({"node", "trn-a"});
  ASSERT_EQ(drawn.exitCode, 0) << drawn.err;
  EXPECT_NE(drawn.out.find("NeuronLink 2D torus 4x4"), std::string::npos) << drawn.out;
  EXPECT_NE(drawn.out.find(" ~ [ 0a]---[ 1a]---[ 2a]---[ 3a] ~"), std::string::npos) << drawn.out;
  EXPECT_NE(drawn.out.find(" ~ [ 8b]---[ 9 ]---[10 ]---[11 ] ~"), std::string::npos) << drawn.out;
  EXPECT_NE(drawn.out.find("ml/train"), std::string::npos);
  EXPECT_NE(drawn.out.find("cores 32-33"), std::string::npos);
  const ProcessResult ring = run({"node", "inf-b"});
  ASSERT_EQ(ring.exitCode, 0) << ring.err;
  EXPECT_NE(ring.out.find("[ 3a]---[ 4 ]"), std::string::npos) << ring.out;
  EXPECT_NE(ring.out.find("[11!]"), std::string::npos) << ring.out;
  const ProcessResult missing = run({"node", "cpu"});
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_NE(missing.err.find("node cpu is not a Neuron node"), std::string::npos) << missing.err;
}

TEST_F(KubectlNeuronTest, PodsListsRequestsIdsAndHandOffState) {
  const ProcessResult table = run({"pods"});
  ASSERT_EQ(table.exitCode, 0) << table.err;
  EXPECT_NE(table.out.find("waiting"), std::string::npos) << "pending pods are listed too";
  EXPECT_EQ(table.out.find("cpu-only"), std::string::npos);
  const ProcessResult onlyMl = run({"pods", "--namespace=ml", "--json"});
  ASSERT_EQ(onlyMl.exitCode, 0) << onlyMl.err;
  const json pods = json::parse(onlyMl.out);
  ASSERT_EQ(pods.size(), 3U);
  EXPECT_EQ(pods[0]["name"], "infer");
  EXPECT_EQ(pods[0]["ids"], json({32, 33}));
  EXPECT_EQ(pods[0]["allocated"], "false");
  EXPECT_EQ(pods[2]["name"], "train");
  EXPECT_EQ(pods[2]["cores"].size(), 32U);
}

// A user whose credentials come from an exec plugin (as EKS's kubeconfigs have): the plugin's
// token gets the nodes; when the plugin fails, its exit code and what it said reach the user.
TEST_F(KubectlNeuronTest, AnExecPluginUserWorksAndAFailingPluginIsShown) {
  const auto plugin = dir_->path() / "get-token";
  const auto kubeconfig = dir_->path() / "exec-kubeconfig";
  ASSERT_TRUE(writeFile(kubeconfig,
                        "current-context: c\n"
                        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                        "clusters: [{name: k, cluster: {server: \"" +
                            api_.url() +
                            "\"}}]\n"
                            "users: [{name: u, user: {exec: {apiVersion: "
                            "client.authentication.k8s.io/v1beta1, command: ./get-token}}}]\n")
                  .ok());
  const auto runWith = [&](const std::string& script) {
    EXPECT_TRUE(writeFile(plugin, "#!/bin/sh\n" + script).ok());
    ::chmod(plugin.c_str(), 0755);
    return runProcess(
        {binaryPath("kubectl-neuron"), "--kubeconfig=" + kubeconfig.string(), "nodes"});
  };
  const ProcessResult works = runWith(
      "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
      "\"status\":{\"token\":\"t\"}}'\n");
  EXPECT_EQ(works.exitCode, 0) << works.err;
  EXPECT_NE(works.out.find("trn-a"), std::string::npos) << works.out;
  const ProcessResult fails = runWith("echo 'no AWS credentials; run aws configure' >&2\nexit 4\n");
  EXPECT_EQ(fails.exitCode, 1);
  EXPECT_NE(fails.err.find("exited with code 4; it said:\nno AWS credentials; run aws configure"),
            std::string::npos)
      << fails.err;
}

TEST(KubectlNeuron, UsageAndKubeconfigErrorsAreClear) {
  const ProcessResult usage = runProcess({binaryPath("kubectl-neuron"), "frobnicate"});
  EXPECT_EQ(usage.exitCode, 2);
  EXPECT_NE(usage.err.find("expected one of: nodes, node NAME, pods"), std::string::npos);
  const ProcessResult help = runProcess({binaryPath("kubectl-neuron"), "--help"});
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("kubectl neuron nodes"), std::string::npos);
  const ProcessResult missing =
      runProcess({binaryPath("kubectl-neuron"), "--kubeconfig=/nonexistent/config", "nodes"});
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_NE(missing.err.find("/nonexistent/config"), std::string::npos) << missing.err;
}

// `top` against a real agent: kubelet's stand-in says which containers hold which ids, the agent
// labels its /metrics with them, and top finds the agent pod through the API and reads it (the
// stand-in API server has no pod proxy, so auto falls back to the pod's IP).
TEST(KubectlNeuronTop, ShowsEachPodsCoresFromTheAgentsMetrics) {
  using namespace std::chrono_literals;
  FakeApiServer api;
  auto dir = TempDir::create("kubectl-neuron-top");
  ASSERT_TRUE(dir.ok());
  const std::string kubeconfig = (dir->path() / "kubeconfig").string();
  api.writeKubeconfig(kubeconfig);
  json node = makeNode("trn-a", "trn2.48xlarge");
  node["status"]["conditions"] = json::array(
      {{{"type", "NeuronHealth"}, {"status", "False"}, {"reason", "NeuronHasNoError"}}});
  api.put("nodes", node);
  const std::string plugins = (dir->path() / "plugins").string();
  std::filesystem::create_directories(plugins);
  const std::string podResources = (dir->path() / "pod-resources.sock").string();
  FakeKubelet kubelet(plugins, podResources);
  kubelet.start();
  kubelet.setPodAssignments({{"ml", "train", "aws.amazon.com/neuron", {"2", "3"}},
                             {"ml", "infer", "aws.amazon.com/neuroncore", {"40"}}});
  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                           "--simulate-dir=" + (dir->path() / "sim").string(),
                           "--device-plugin-dir=" + plugins,
                           "--pod-resources-socket=" + podResources, "--metrics-addr=127.0.0.1:0",
                           "--admin-addr=127.0.0.1:0", "--publish-node=false"});
  ASSERT_TRUE(kubelet.waitForRegistration("aws.amazon.com/neuron", 1, 20s)) << agent.stderrText();
  // Registration comes before the agent serves HTTP: wait for the line that names the port.
  const auto serving = agent.waitForStderr("\"serving HTTP\"", 10s);
  ASSERT_TRUE(serving.has_value()) << agent.stderrText();
  const int port = loggedPort(*serving, "\"serving HTTP\"");
  // The chart's agent: a pod of the agent namespace that its DaemonSet controls.
  api.put(kDaemonSets,
          {{"metadata", {{"namespace", "kube-system"}, {"name", "torus-node-agent"}}}});
  const std::string daemonSetUid =
      api.get(kDaemonSets, "kube-system/torus-node-agent")->at("metadata").at("uid");
  json pod = makePod("kube-system", "torus-node-agent-x", "example.com/none", 1);
  pod["metadata"]["labels"]["app.kubernetes.io/component"] = "node-agent";
  pod["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                                     {"kind", "DaemonSet"},
                                                     {"name", "torus-node-agent"},
                                                     {"uid", daemonSetUid},
                                                     {"controller", true}}});
  pod["spec"]["nodeName"] = "trn-a";
  pod["spec"]["containers"][0]["ports"] =
      json::array({{{"name", "metrics"}, {"containerPort", port}}});
  pod["status"]["phase"] = "Running";
  pod["status"]["podIP"] = "127.0.0.1";
  api.put("pods", pod);
  const auto top = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {binaryPath("kubectl-neuron"), "--kubeconfig=" + kubeconfig, "top"});
    return runProcess(args);
  };
  ProcessResult shown;
  ASSERT_TRUE(eventually([&] {
    shown = top({"--once"});
    return shown.out.find("infer") != std::string::npos;
  })) << shown.out
      << shown.err << agent.stderrText();
  EXPECT_EQ(shown.exitCode, 0);
  for (const char* expected :
       {"trn2.48xlarge", "9/64", "16/16", "NeuronHealth=False (NeuronHasNoError)", "train", "8-15",
        "2-3", "aws.amazon.com/neuron", "40", "aws.amazon.com/neuroncore"}) {
    EXPECT_NE(shown.out.find(expected), std::string::npos) << expected << "\n" << shown.out;
  }
  const ProcessResult detailed = top({"trn-a", "--json"});
  ASSERT_EQ(detailed.exitCode, 0) << detailed.err;
  const json parsed = json::parse(detailed.out);
  ASSERT_EQ(parsed["nodes"].size(), 1U);
  EXPECT_EQ(parsed["nodes"][0]["coresUsed"], 9);
  EXPECT_EQ(parsed["nodes"][0]["deviceCount"], 16);
  EXPECT_EQ(parsed["nodes"][0]["devices"].size(), 16U);
  bool sawInfer = false;
  for (const json& use : parsed["nodes"][0]["pods"]) {
    if (use["pod"] == "infer") {
      sawInfer = true;
      EXPECT_EQ(use["cores"], json({40}));
      EXPECT_EQ(use["devices"], json({10}));
      EXPECT_EQ(use["container"], "main");
    }
  }
  EXPECT_TRUE(sawInfer) << detailed.out;
  // Through the proxy only: the stand-in has none, and top says so per node instead of failing.
  const ProcessResult proxied = top({"--once", "--via=proxy"});
  EXPECT_EQ(proxied.exitCode, 0) << proxied.err;
  EXPECT_NE(proxied.out.find("metrics unreadable"), std::string::npos) << proxied.out;
  // A pod with no IP (kubelet on loopback): said so, and read at the address given instead.
  pod["status"].erase("podIP");
  api.put("pods", pod);
  EXPECT_NE(top({"--once"}).out.find("the pod has no IP"), std::string::npos);
  EXPECT_NE(top({"--once", "--agent-host=127.0.0.1"}).out.find("infer"), std::string::npos);
  const ProcessResult bad = top({"--via=carrier-pigeon"});
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_NE(bad.err.find("--via must be auto, proxy"), std::string::npos) << bad.err;
  EXPECT_NE(top({"trn-z", "--once"}).out.find("no Neuron node agent runs on trn-z"),
            std::string::npos);
  // Installed elsewhere, the agent is not found where it is not; --agent-namespace finds it.
  api.put(kDaemonSets, {{"metadata", {{"namespace", "torus"}, {"name", "torus-node-agent"}}}});
  EXPECT_NE(top({"trn-a", "--once", "--agent-namespace=torus"})
                .out.find("no Neuron node agent runs on trn-a"),
            std::string::npos);
  // Its DaemonSet gone, the labelled pod that is left is nobody's agent.
  api.remove(kDaemonSets, "kube-system/torus-node-agent");
  EXPECT_NE(top({"trn-a", "--once"}).out.find("no Neuron node agent runs on trn-a"),
            std::string::npos);
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0));
}

}  // namespace
}  // namespace torus::testing
