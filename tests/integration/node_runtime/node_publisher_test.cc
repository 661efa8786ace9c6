// neuron-node-agent publishing its node through the API-server stand-in: labels and the
// torus.dev/topology annotation as single-key merge patches (someone else's keys untouched, our
// stale ones removed), the NeuronHealthy condition by strategic merge (other conditions kept),
// and both following a device that leaves and rejoins service.
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/unique_fd.h"
#include "common/contracts/topology_annotation.h"
#include "tests/integration/kube/fake_api_server.h"
#include "tests/integration/node_runtime/driver_served_tree.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

json conditionOf(const json& node, const std::string& type) {
  for (const json& condition : node["status"].value("conditions", json::array())) {
    if (condition.value("type", "") == type) return condition;
  }
  return nullptr;
}

// Each test: an API-server stand-in holding its nodes, a kubeconfig for it, and a directory for
// the simulated node.
class NodePublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = TempDir::create("publisher");
    ASSERT_TRUE(made.ok());
    dir = std::make_unique<TempDir>(std::move(*made));
    kubeconfig = (dir->path() / "kubeconfig").string();
    sim = dir->path() / "sim";
    api.writeKubeconfig(kubeconfig);
  }

  // A tree of `type` whose resets the simulated driver serves, as `sim`: for a test in which the
  // agent resets a device (a device back from a fault is reset before it returns).
  void serveTree(const std::string& type) {
    if (auto why = DriverServedTree::unusableBecause()) GTEST_SKIP() << *why;
    simulator::SimulationSpec spec;
    spec.instanceType = type;
    auto served = DriverServedTree::start(spec, dir->path() / "served");
    ASSERT_TRUE(served.ok()) << served.error().message;
    served_ = std::move(*served);
    sim = served_->view();
  }

  // neuronN's serial number as the simulated driver reports it (info/serial_number): what the
  // runtime's NEURON_HW_ERR lines name the chip by.
  std::string serialOf(int device) const {
    auto text = readSmallFile(sim / "sys" / "devices" / "virtual" / "neuron_device" /
                                  ("neuron" + std::to_string(device)) / "info" / "serial_number",
                              64);
    return text.ok() ? text->substr(0, text->find('\n')) : "";
  }

  FakeApiServer api;
  std::unique_ptr<TempDir> dir;
  std::string kubeconfig;
  fs::path sim;
  std::unique_ptr<DriverServedTree> served_;
};

TEST_F(NodePublisherTest, LabelsAnnotationAndConditionFollowTheDevices) {
  serveTree("trn2.48xlarge");
  if (IsSkipped()) return;
  json node = makeNode("node-a", "trn2.48xlarge");
  node["metadata"]["labels"]["team"] = "ml";
  node["metadata"]["labels"]["neuron.amazonaws.com/ultraserver-mode"] = "X4";  // stale, ours
  node["metadata"]["annotations"]["torus.dev/retired"] = "x";                  // stale, ours
  node["metadata"]["annotations"]["owner"] = "someone";
  node["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
  api.put("nodes", node);

  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                           "--simulate-dir=" + sim.string(), "--device-plugin=false",
                           "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
                           "--health-interval=100ms", "--kubeconfig=" + kubeconfig,
                           "--node-name=node-a"});
  ASSERT_TRUE(eventually([&] {
    return !conditionOf(*api.get("nodes", "node-a"), "NeuronHealthy").is_null();
  })) << agent.stderrText();
  json published = *api.get("nodes", "node-a");
  const json& labels = published["metadata"]["labels"];
  EXPECT_EQ(labels["torus.dev/lnc"], "2");
  EXPECT_EQ(labels["torus.dev/instance-type"], "trn2.48xlarge");
  EXPECT_EQ(labels["torus.dev/device-count"], "16");
  EXPECT_EQ(labels["torus.dev/healthy-devices"], "16");
  EXPECT_EQ(labels["team"], "ml");
  EXPECT_FALSE(labels.contains("neuron.amazonaws.com/ultraserver-mode"));
  const json& annotations = published["metadata"]["annotations"];
  EXPECT_EQ(annotations["owner"], "someone");
  EXPECT_FALSE(annotations.contains("torus.dev/retired"));
  auto topology =
      contracts::parseTopologyAnnotation(annotations["torus.dev/topology"].get<std::string>());
  ASSERT_TRUE(topology.ok()) << topology.error().message;
  EXPECT_EQ(topology->deviceCount, 16);
  EXPECT_EQ(topology->coresPerDevice, 4);
  EXPECT_EQ(conditionOf(published, "NeuronHealthy")["status"], "True");
  EXPECT_EQ(conditionOf(published, "Ready")["status"], "True");

  // Every write touched single keys: no patch carried someone else's key or a whole map.
  for (const FakeApiServer::Write& write : api.writes()) {
    if (write.path == "/api/v1/nodes/node-a") {
      EXPECT_EQ(write.contentType, "application/merge-patch+json");
      EXPECT_FALSE(write.body["metadata"].value("labels", json::object()).contains("team"));
      EXPECT_FALSE(write.body["metadata"].value("annotations", json::object()).contains("owner"));
    } else {
      EXPECT_EQ(write.path, "/api/v1/nodes/node-a/status");
      EXPECT_EQ(write.contentType, "application/strategic-merge-patch+json");
    }
  }

  // Device 5 leaves service (its device node disappears) and comes back.
  const fs::path deviceNode = sim / "dev" / "neuron5";
  fs::rename(deviceNode, deviceNode.string() + ".away");
  ASSERT_TRUE(eventually([&] {
    const json now = *api.get("nodes", "node-a");
    return now["metadata"]["labels"]["torus.dev/healthy-devices"] == "15" &&
           conditionOf(now, "NeuronHealthy")["status"] == "False";
  })) << agent.stderrText();
  published = *api.get("nodes", "node-a");
  EXPECT_EQ(conditionOf(published, "NeuronHealthy")["reason"], "UnhealthyDevices");
  EXPECT_NE(conditionOf(published, "NeuronHealthy")["message"].get<std::string>().find("neuron5"),
            std::string::npos);
  topology = contracts::parseTopologyAnnotation(
      published["metadata"]["annotations"]["torus.dev/topology"].get<std::string>());
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(topology->unhealthy.toRangeString(), "5");
  fs::rename(deviceNode.string() + ".away", deviceNode);
  EXPECT_TRUE(eventually([&] {
    const json now = *api.get("nodes", "node-a");
    return now["metadata"]["labels"]["torus.dev/healthy-devices"] == "16" &&
           conditionOf(now, "NeuronHealthy")["status"] == "True";
  })) << agent.stderrText();
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0)) << agent.stderrText();
}

// AWS's recovery tooling reads NeuronHealth (neuron-node-recovery) and AcceleratedHardwareReady
// (EKS node auto repair): an HBM uncorrectable error in the kernel log sets both with AWS's
// reasons within 2 s, the hold policy clears them, and HyperPod's health label is never touched.
TEST_F(NodePublisherTest, AwsHealthConditionsFollowTheKernelLogWithTheHoldPolicy) {
  json node = makeNode("node-a", "trn2.48xlarge");
  node["metadata"]["labels"]["sagemaker.amazonaws.com/node-health-status"] = "Schedulable";
  node["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
  api.put("nodes", node);
  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                           "--simulate-dir=" + sim.string(), "--device-plugin=false",
                           "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
                           "--health-interval=100ms", "--kubeconfig=" + kubeconfig,
                           "--node-name=node-a", "--accelerated-hardware-condition",
                           "--health-condition-clear=hold", "--kernel-error-hold=1500ms"});
  ASSERT_TRUE(eventually([&] {
    const json now = *api.get("nodes", "node-a");
    return conditionOf(now, "NeuronHealth")["reason"] == "NeuronHasNoError" &&
           conditionOf(now, "AcceleratedHardwareReady")["reason"] ==
               "NeuronAcceleratedHardwareIsReady";
  })) << agent.stderrText();
  json published = *api.get("nodes", "node-a");
  EXPECT_EQ(conditionOf(published, "NeuronHealth")["status"], "False");
  EXPECT_EQ(conditionOf(published, "AcceleratedHardwareReady")["status"], "True");
  ASSERT_TRUE(eventually(
      [&] { return agent.stderrText().find("following the kernel log") != std::string::npos; }));

  // Appended, as the kernel's log only grows (it holds the driver's load lines already).
  std::ofstream(sim / "dev" / "kmsg", std::ios::app)
      << "3,90,1000,-;NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR nd-id=7 serial-num=" << serialOf(7)
      << " action=TERMINATE_INSTANCE\n";
  // A line alone is a claim: an Event on the node, and AWS's conditions untouched.
  const auto claimEvent = [&] {
    for (const json& event : api.events()) {
      if (event.value("reason", "") == "NeuronHardwareErrorClaimed") return event;
    }
    return json();
  };
  ASSERT_TRUE(eventually([&] { return !claimEvent().is_null(); }, 2s)) << agent.stderrText();
  EXPECT_NE(claimEvent()["message"].get<std::string>().find("neuron7"), std::string::npos);
  EXPECT_EQ(conditionOf(*api.get("nodes", "node-a"), "NeuronHealth")["status"], "False")
      << "the claim was handled before its Event was posted";
  // The chip's firmware ECC counter rises within the hold: the claim is proven.
  const auto reported = std::chrono::steady_clock::now();
  ASSERT_TRUE(writeFile(sim / "sys" / "devices" / "virtual" / "neuron_device" / "neuron7" /
                            "stats" / "hardware" / "mem_ecc_uncorrected",
                        "1\n")
                  .ok());
  ASSERT_TRUE(eventually(
      [&] { return conditionOf(*api.get("nodes", "node-a"), "NeuronHealth")["status"] == "True"; },
      2s))
      << "AWS's reason within 2 s of the firmware's counter\n"
      << agent.stderrText();
  const auto took = std::chrono::steady_clock::now() - reported;
  std::cout << "NeuronHealth set "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
            << " ms after the firmware counter rose\n";
  published = *api.get("nodes", "node-a");
  const json health = conditionOf(published, "NeuronHealth");
  EXPECT_EQ(health["reason"], "NeuronHasError_HBM_UNCORRECTABLE_ERROR");
  EXPECT_NE(health["message"].get<std::string>().find("HBM_UNCORRECTABLE_ERROR on neuron7"),
            std::string::npos)
      << health;
  const json ready = conditionOf(published, "AcceleratedHardwareReady");
  EXPECT_EQ(ready["status"], "False");
  EXPECT_EQ(ready["reason"], "NeuronHBMUncorrectableError");
  EXPECT_EQ(conditionOf(published, "Ready")["status"], "True") << "others' conditions stay";

  // Hold policy: 1.5 s without another error clears both.
  EXPECT_TRUE(eventually(
      [&] {
        const json now = *api.get("nodes", "node-a");
        return conditionOf(now, "NeuronHealth")["status"] == "False" &&
               conditionOf(now, "AcceleratedHardwareReady")["status"] == "True";
      },
      4s))
      << agent.stderrText();
  EXPECT_EQ(api.get("nodes", "node-a")
                ->at("metadata")["labels"]["sagemaker.amazonaws.com/node-health-status"],
            "Schedulable");
  for (const FakeApiServer::Write& write : api.writes()) {
    EXPECT_EQ(write.body.dump().find("sagemaker.amazonaws.com"), std::string::npos)
        << "HyperPod's label is never written";
  }
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0)) << agent.stderrText();
}

// The default policy is AWS's: the error stands until the node reboots. An agent restart on the
// same boot keeps it; a condition set before this boot is cleared.
TEST_F(NodePublisherTest, NeuronHealthStandsUntilTheNodeReboots) {
  api.put("nodes", makeNode("node-a", "trn2.48xlarge"));
  const std::vector<std::string> args = {
      binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge", "--simulate-dir=" + sim.string(),
      "--device-plugin=false", "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
      "--health-interval=100ms", "--kubeconfig=" + kubeconfig, "--node-name=node-a",
      "--kernel-error-hold=500ms",
      // A node with one tenant: a line alone is acted on.
      "--kernel-log-trust-reports"};
  const auto reason = [&] {
    const json condition = conditionOf(*api.get("nodes", "node-a"), "NeuronHealth");
    return condition.is_null() ? std::string() : condition.value("reason", "");
  };
  {
    BackgroundProcess agent(args);
    ASSERT_TRUE(eventually([&] { return reason() == "NeuronHasNoError"; })) << agent.stderrText();
    ASSERT_TRUE(eventually(
        [&] { return agent.stderrText().find("following the kernel log") != std::string::npos; }));
    std::ofstream(sim / "dev" / "kmsg", std::ios::app)
        << "NEURON_HW_ERR=DMA_ERROR nd-id=2 serial-num=" << serialOf(2) << "\n";
    ASSERT_TRUE(eventually([&] { return reason() == "NeuronHasError_DMA_ERROR"; }, 2s))
        << agent.stderrText();
    std::this_thread::sleep_for(1500ms);  // three holds: the device is back, the error stands
    EXPECT_EQ(reason(), "NeuronHasError_DMA_ERROR");
    agent.signal(SIGTERM);
    EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0));
  }
  {
    BackgroundProcess agent(args);  // same boot: kept
    ASSERT_TRUE(
        eventually([&] { return agent.stderrText().find("serving HTTP") != std::string::npos; }));
    std::this_thread::sleep_for(1s);
    EXPECT_EQ(reason(), "NeuronHasError_DMA_ERROR") << agent.stderrText();
    agent.signal(SIGTERM);
    EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0));
  }
  // As after a reboot: the condition is older than the host's boot.
  json node = *api.get("nodes", "node-a");
  for (json& condition : node["status"]["conditions"]) {
    if (condition["type"] == "NeuronHealth")
      condition["lastTransitionTime"] = "2001-01-01T00:00:00Z";
  }
  api.put("nodes", node);
  BackgroundProcess agent(args);
  EXPECT_TRUE(eventually([&] { return reason() == "NeuronHasNoError"; })) << agent.stderrText();
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0));
}

// Regression, as the operator sees it: logical_nc_config changes while a process holds
// /dev/neuron0; the node keeps LNC 2 and says why (condition, Warning event) until it is let go.
TEST_F(NodePublisherTest, AnLncChangeWaitsForTheNodeToDrainAndSaysSo) {
  api.put("nodes", makeNode("node-a", "trn2.48xlarge"));
  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                           "--simulate-dir=" + sim.string(), "--device-plugin=false",
                           "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
                           "--health-interval=100ms", "--kubeconfig=" + kubeconfig,
                           "--node-name=node-a"});
  const auto label = [&] {
    return api.get("nodes", "node-a")->value("/metadata/labels/torus.dev~1lnc"_json_pointer, "");
  };
  ASSERT_TRUE(eventually([&] { return label() == "2"; })) << agent.stderrText();
  // O_PATH: the simulated node has no driver to open; the /proc link is what the scan sees.
  std::optional<UniqueFd> holder(UniqueFd(::open((sim / "dev" / "neuron0").c_str(), O_PATH)));
  ASSERT_TRUE(holder->valid());
  ASSERT_TRUE(writeFile(sim / "opt" / "aws" / "neuron" / "logical_nc_config",
                        "NEURON_LOGICAL_NC_CONFIG=1\n")
                  .ok());
  const auto eventWith = [&](const std::string& reason) {
    for (const json& event : api.events()) {
      if (event.value("reason", "") == reason) return event;
    }
    return json();
  };
  ASSERT_TRUE(eventually([&] { return !eventWith("LNCChangeDeferred").is_null(); }, 15s))
      << agent.stderrText();
  const json deferred = eventWith("LNCChangeDeferred");
  EXPECT_EQ(deferred["type"], "Warning");
  EXPECT_EQ(deferred["involvedObject"]["kind"], "Node");
  EXPECT_EQ(deferred["involvedObject"]["name"], "node-a");
  const json condition = conditionOf(*api.get("nodes", "node-a"), "NeuronHealthy");
  EXPECT_EQ(condition["reason"], "LNCChangePending");
  EXPECT_NE(condition["message"].get<std::string>().find("asks for LNC 1"), std::string::npos);
  EXPECT_EQ(label(), "2") << "held cores keep their numbering";
  EXPECT_NE(agent.stderrText().find("keeping the LNC in force"), std::string::npos);

  holder.reset();  // the node drains
  EXPECT_TRUE(eventually([&] { return label() == "1"; }, 15s)) << agent.stderrText();
  EXPECT_TRUE(eventually([&] { return !eventWith("LNCChangeApplied").is_null(); }));
  EXPECT_EQ(conditionOf(*api.get("nodes", "node-a"), "NeuronHealthy")["reason"],
            "AllDevicesHealthy");
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0)) << agent.stderrText();
}

TEST_F(NodePublisherTest, KeepsRetryingWhileTheApiServerFails) {
  api.put("nodes", makeNode("node-b", "inf2.xlarge"));
  api.failNext("GET", "/api/v1/nodes/node-b", 503);
  api.failNext("PATCH", "/api/v1/nodes/node-b", 500);
  // Without the kernel log followed, AWS's conditions are not claimed either way.
  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=inf2.xlarge",
                           "--device-plugin=false", "--metrics-addr=127.0.0.1:0",
                           "--admin-addr=127.0.0.1:0", "--kubeconfig=" + kubeconfig,
                           "--node-name=node-b", "--kernel-log=none"});
  EXPECT_TRUE(eventually([&] {
    const json node = *api.get("nodes", "node-b");
    return node.at("metadata").at("labels").contains("torus.dev/lnc") &&
           !conditionOf(node, "NeuronHealthy").is_null();
  })) << agent.stderrText();
  EXPECT_NE(agent.stderrText().find("could not publish node metadata"), std::string::npos);
  EXPECT_TRUE(conditionOf(*api.get("nodes", "node-b"), "NeuronHealth").is_null());
  EXPECT_NE(agent.stderrText().find("conditions are not set: the kernel log is not followed"),
            std::string::npos);
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0));
}

}  // namespace
}  // namespace torus::testing
