// Which pods a stopping agent still waits for (node_agent.cc): pods bound to its node that ask
// for a Neuron resource and that kubelet has not admitted yet, read from a real watch of the
// API. Kubelet's own status on a pod, or pod-resources listing it, is what says it was admitted.
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/device_plugin/followed_handoff.h"

namespace torus {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiServer;

nlohmann::json boundPod(const std::string& name, const std::string& node) {
  nlohmann::json pod = testing::makePod("ml", name, "aws.amazon.com/neuroncore", 4);
  pod["metadata"]["uid"] = "uid-" + name;  // kept when the test writes the pod again
  pod["spec"]["nodeName"] = node;
  return pod;
}

// The scheduler's condition, and `type` (one kubelet writes) unless that is the scheduler's.
nlohmann::json withCondition(nlohmann::json pod, const std::string& type) {
  pod["status"]["conditions"] =
      nlohmann::json::array({{{"type", "PodScheduled"}, {"status", "True"}}});
  if (type != "PodScheduled") {
    pod["status"]["conditions"].push_back({{"type", type}, {"status", "False"}});
  }
  return pod;
}

class PodHandoffAdmissionTest : public ::testing::Test {
 protected:
  // What the watch shows within 5 s (the list may still be on its way).
  std::vector<std::string> awaitingEventually(const std::vector<std::string>& expected,
                                              const std::set<std::string>& admitted = {}) {
    std::vector<std::string> awaiting;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    do {
      awaiting = handoff_->awaitingAdmissionExcept(admitted);
      if (awaiting == expected) break;
      std::this_thread::sleep_for(10ms);
    } while (std::chrono::steady_clock::now() < deadline);
    return awaiting;
  }

  FakeApiServer api_;
  std::unique_ptr<agent::PodAnnotationHandoff> handoff_;
};

TEST_F(PodHandoffAdmissionTest, WaitsOnlyForBoundNeuronPodsKubeletHasNotAdmitted) {
  api_.put("pods", boundPod("bound", "node-a"));
  api_.put("pods", withCondition(boundPod("started", "node-a"), "PodReadyToStartContainers"));
  api_.put("pods", withCondition(boundPod("initialized", "node-a"), "Initialized"));
  nlohmann::json running = boundPod("running", "node-a");
  running["status"]["phase"] = "Running";
  api_.put("pods", running);
  nlohmann::json refused = boundPod("refused", "node-a");
  refused["status"]["phase"] = "Failed";
  refused["status"]["reason"] = "UnexpectedAdmissionError";
  api_.put("pods", refused);
  nlohmann::json plain = boundPod("cpu-only", "node-a");
  plain["spec"]["containers"][0]["resources"] = nlohmann::json::object();
  api_.put("pods", plain);
  api_.put("pods", boundPod("elsewhere", "node-b"));
  // Scheduled here but with only the scheduler's condition: kubelet has not written its status.
  api_.put("pods", withCondition(boundPod("scheduled", "node-a"), "PodScheduled"));
  ASSERT_NO_FATAL_FAILURE(testing::followHandoff(api_, "node-a", handoff_));

  EXPECT_EQ(awaitingEventually({"ml/bound", "ml/scheduled"}),
            (std::vector<std::string>{"ml/bound", "ml/scheduled"}));
  // pod-resources lists one: kubelet gave it ids.
  EXPECT_EQ(awaitingEventually({"ml/scheduled"}, {"ml/bound"}),
            std::vector<std::string>{"ml/scheduled"});
  // Kubelet's first status on the other arrives through the watch.
  api_.put("pods", withCondition(boundPod("scheduled", "node-a"), "PodReadyToStartContainers"));
  EXPECT_EQ(awaitingEventually({"ml/bound"}), std::vector<std::string>{"ml/bound"});
}

}  // namespace
}  // namespace torus
