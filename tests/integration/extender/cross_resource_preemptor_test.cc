// The cross-resource preemptor against the API stand-in: a 4-device pod waits Unschedulable on a
// trn2 whose devices 4-15 are held by 4-core pods. If its devices 0-3 are held by 4-core pods too
// it plans (evicts) once; if the extender has already placed it on 0-3 — its object still says
// Unschedulable until the binding shows up — it must not plan again (seen on the real cluster:
// a second set of four pods evicted for nothing).
#include "scheduler-extender/kube/cross_resource_preemptor.h"

#include <chrono>
#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/kube/fake_api_server.h"
#include "tests/unit/extender/test_pods.h"

namespace torus::extender {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
constexpr auto kCore = topology::AllocationUnit::kCore;
constexpr auto kDevice = topology::AllocationUnit::kDevice;

kube::KubeConfig configOf(const torus::testing::FakeApiServer& api) {
  kube::KubeConfig config;
  config.server = api.url();
  config.token = kube::BearerToken::fixed("t");
  return config;
}

// The device pod as the API shows it while kube-scheduler last found no room for it.
json waitingDevicePod() {
  json pod = torus::testing::makePod("default", "pod-high", "aws.amazon.com/neuron", 4);
  pod["metadata"]["uid"] = "high";
  pod["spec"]["schedulerName"] = "neuron-scheduler";
  pod["spec"]["priority"] = 1000;
  pod["status"]["conditions"] =
      json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}});
  return pod;
}

// Plans made in the twelve rounds after the pod came, with devices 4-15 held by 4-core pods, and
// 0-3 by 4-core pods too or, once the extender has placed it, by the device pod itself.
int plansWith(bool devicePodPlaced, bool inGang = false) {
  torus::testing::FakeApiServer api;
  ClusterState state;
  EXPECT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  for (int device = devicePodPlaced ? 4 : 0; device < 16; ++device) {
    EXPECT_TRUE(state
                    .record("n", testing::testPod("d" + std::to_string(device), kCore, 4, 0),
                            topology::CoreSet::range(4 * device, 4))
                    .ok());
  }
  if (devicePodPlaced) {
    EXPECT_TRUE(
        state
            .record("n", testing::testPod("high", kDevice, 4, 1000), topology::CoreSet::range(0, 4))
            .ok());
  }
  CrossResourcePreemptionOptions options;
  options.period = 50ms;
  NodeFactsIndex nodes;
  nodes.applyList({parseNodeUpdate(torus::testing::makeNode("n", "trn2.48xlarge"), false)});
  CrossResourcePreemptor preemptor(configOf(api), state, nodes, options);
  json waiting = waitingDevicePod();
  if (inGang) {
    waiting["metadata"]["labels"] = {{"torus.dev/gang", "train"}, {"torus.dev/gang-size", "2"}};
  }
  preemptor.applyPods({parsePodUpdate(waiting, false)});
  EXPECT_TRUE(preemptor.waitForRounds(12, 10s));
  const std::string text = preemptor.prometheusText();
  const std::string series = "\ntorus_extender_cross_resource_preemptions_total ";
  const std::size_t at = text.find(series);
  EXPECT_NE(at, std::string::npos) << text;
  return at == std::string::npos ? -1 : std::stoi(text.substr(at + series.size()));
}

TEST(CrossResourcePreemptor, PlansForAWaitingPodWhoseDevicesOthersHold) {
  EXPECT_EQ(plansWith(false), 1);
}

TEST(CrossResourcePreemptor, DoesNotPlanAgainForAPodTheExtenderHasPlaced) {
  EXPECT_EQ(plansWith(true), 0);
}

// A gang member waits for its whole gang to fit: evicting for it alone would free room for part
// of a gang (docs/gangs.md).
TEST(CrossResourcePreemptor, NeverPlansForAMemberOfAGang) {
  EXPECT_EQ(plansWith(false, true), 0);
}

}  // namespace
}  // namespace torus::extender
