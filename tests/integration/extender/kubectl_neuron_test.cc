// kubectl-neuron against the API-server stand-in: the same state the extender derives from pods,
// as tables, drawings and JSON, and clear errors for a missing node or kubeconfig.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/temp_dir.h"
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

}  // namespace
}  // namespace torus::testing
