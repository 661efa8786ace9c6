#include "scheduler-extender/verbs/victims.h"

#include <gtest/gtest.h>

#include "common/topology/neuronlink_graph.h"
#include "common/topology/placement.h"
#include "scheduler-extender/verbs/verbs.h"
#include "tests/unit/extender/test_pods.h"

namespace torus::extender {
namespace {

constexpr auto kCore = topology::AllocationUnit::kCore;
constexpr auto kDevice = topology::AllocationUnit::kDevice;

PodDemand pod(const std::string& uid, topology::AllocationUnit unit, int count, int priority) {
  return testing::testPod(uid, unit, count, priority);
}

// A trn2.48xlarge (16 devices, LNC 2: 4 cores each) full of 4-core pods, one per device, seen
// running (not merely assumed), named "d<device>".
void fillTrn2(ClusterState& state, int priority) {
  EXPECT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  for (int device = 0; device < 16; ++device) {
    const std::string uid = "d" + std::to_string(device);
    EXPECT_TRUE(
        state.record("n", pod(uid, kCore, 4, priority), topology::CoreSet::range(4 * device, 4))
            .ok());
  }
}

// The cores the victims free, as the node would see them once they are gone.
topology::CoreSet freedBy(const ClusterState& state, const std::vector<std::string>& victims) {
  topology::CoreSet freed;
  for (const std::string& uid : victims) {
    if (const auto held = state.allocationOf(uid)) freed |= held->cores;
  }
  return freed;
}

// Kube-scheduler's count-based victims are the four newest pods, one per
// row, so evicting them opens no 16-core set and the preemptor stayed Pending for ever.
TEST(ChooseVictims, ReplacesScatteredVictimsWithAMinimalSetThatFreesAValidShape) {
  ClusterState state;
  fillTrn2(state, 0);
  const PodDemand high = pod("high", kCore, 16, 1000);
  const std::vector<std::string> proposed = {"d0", "d5", "d10", "d15", "cpu-only"};
  const auto victims = chooseVictims(*state.node("n"), state.allocationsOn("n"), high, proposed);
  ASSERT_TRUE(victims.has_value());
  // The pod kube-scheduler chose for CPU or memory (it holds no Neuron core here) stays a victim.
  EXPECT_EQ(std::count(victims->begin(), victims->end(), "cpu-only"), 1);
  EXPECT_EQ(victims->size(), 5U)
      << "exactly one 16-core shape's worth of 4-core pods, plus cpu-only";
  const topology::CoreSet freed = freedBy(state, *victims);
  const auto placed = topology::choosePlacement(state.node("n")->model, {kCore, 16, freed, {}});
  ASSERT_TRUE(placed.ok()) << "the freed cores " << freed.toRangeString() << " hold no valid set";
  EXPECT_EQ(*placed, freed);
}

// Seen on the real cluster: with an 8-core pod on devices 0-1 and newer pods on 5, 10 and 15,
// the greedy choice freed cores 12-27 (devices 3-6: a valid core run, but across two rows, not
// linked among themselves). Whole-device requests now clear the cheapest allowed shape.
TEST(ChooseVictims, WholeDeviceRequestsClearOneConnectedShape) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.record("n", pod("waiter", kCore, 8, 0), topology::CoreSet::range(0, 8)).ok());
  for (int device = 2; device < 16; ++device) {
    const std::string uid = "d" + std::to_string(device);
    ASSERT_TRUE(
        state.record("n", pod(uid, kCore, 4, 0), topology::CoreSet::range(4 * device, 4)).ok());
  }
  const auto victims = chooseVictims(*state.node("n"), state.allocationsOn("n"),
                                     pod("high", kCore, 16, 1000), {"waiter", "d10", "d15"});
  ASSERT_TRUE(victims.has_value());
  topology::DeviceSet devices;
  for (const std::string& uid : *victims) {
    const auto held = state.allocationOf(uid);
    ASSERT_TRUE(held.has_value()) << uid;
    devices |= state.node("n")->model.devicesOfCores(held->cores);
  }
  EXPECT_EQ(devices.size(), 4U) << devices.toRangeString();
  const auto model = state.node("n")->model;
  EXPECT_TRUE(topology::NeuronLinkGraph::fromNode(model).isConnected(devices))
      << devices.toRangeString() << " are not linked among themselves";
  EXPECT_LE(victims->size(), 3U) << "the waiter's two devices plus two more: the cheapest row";
}

TEST(ChooseVictims, KeepsKubeSchedulersChoiceWhenItFreesAValidShape) {
  ClusterState state;
  fillTrn2(state, 0);
  const std::vector<std::string> row = {"d0", "d1", "d2", "d3"};
  ASSERT_TRUE(
      topology::choosePlacement(state.node("n")->model, {kCore, 16, freedBy(state, row), {}}).ok());
  const auto victims =
      chooseVictims(*state.node("n"), state.allocationsOn("n"), pod("high", kCore, 16, 1), row);
  ASSERT_TRUE(victims.has_value());
  EXPECT_EQ(*victims, row);
}

TEST(ChooseVictims, NeverEvictsAPodOfEqualOrHigherPriority) {
  ClusterState state;
  fillTrn2(state, 1000);
  for (int priority : {1000, 999}) {
    EXPECT_FALSE(chooseVictims(*state.node("n"), state.allocationsOn("n"),
                               pod("p", kCore, 16, priority), {"d0", "d5", "d10", "d15"})
                     .has_value())
        << priority;
  }
}

TEST(ChooseVictims, PrefersTheLowestPriorityPods) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  // Devices 0-7 run priority 50, devices 8-15 priority 10: a 4-device set exists in both halves.
  for (int device = 0; device < 16; ++device) {
    const int priority = device < 8 ? 50 : 10;
    ASSERT_TRUE(state
                    .record("n", pod("d" + std::to_string(device), kDevice, 1, priority),
                            topology::DeviceSet::range(device, 1))
                    .ok());
  }
  const auto victims = chooseVictims(*state.node("n"), state.allocationsOn("n"),
                                     pod("high", kDevice, 4, 100), {"d0", "d7", "d8", "d15"});
  ASSERT_TRUE(victims.has_value());
  ASSERT_EQ(victims->size(), 4U);
  for (const std::string& uid : *victims)
    EXPECT_EQ(state.allocationOf(uid)->priority, 10) << uid;
}

TEST(ChooseVictims, PodsNotYetSeenRunningAreNeverVictims) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  // Bound by us a moment ago, not yet seen on the API: kube-scheduler may not list it on the node,
  // so the extender never adds it; kube-scheduler itself may name it.
  ASSERT_TRUE(bindPod(state, pod("assumed", kDevice, 16, 0), "n").ok());
  EXPECT_FALSE(chooseVictims(*state.node("n"), state.allocationsOn("n"),
                             pod("high", kDevice, 4, 100), {"other"})
                   .has_value());
  EXPECT_EQ(chooseVictims(*state.node("n"), state.allocationsOn("n"), pod("high", kDevice, 4, 100),
                          {"assumed"}),
            (std::vector<std::string>{"assumed"}));
}

TEST(Preempt, AnswersPerNodeAndLeavesOutNodesWithNoValidSet) {
  ClusterState state;
  fillTrn2(state, 0);
  ASSERT_TRUE(state.upsertNode("other", "trn2.48xlarge").ok());
  ASSERT_TRUE(
      state.record("other", pod("vip", kDevice, 16, 2000), topology::DeviceSet::range(0, 16)).ok());
  const auto accepted =
      preempt(state, pod("high", kDevice, 4, 1000),
              {{"n", {"d0", "d5", "d10", "d15"}}, {"other", {"vip"}}, {"ghost", {"x"}}});
  ASSERT_EQ(accepted.size(), 1U);
  EXPECT_EQ(accepted.at("n").size(), 4U);
}

// A node full of 4-core pods leaves no device for a device pod, and
// kube-scheduler never asks /preempt since the pods hold another resource.
TEST(CrossResourcePreemption, PlansTheCheapestNodeWhereEvictingCorePodsFreesDevices) {
  ClusterState state;
  fillTrn2(state, 0);
  ASSERT_TRUE(state.upsertNode("busier", "trn2.48xlarge").ok());
  for (int device = 0; device < 16; ++device) {
    ASSERT_TRUE(state
                    .record("busier", pod("b" + std::to_string(device), kCore, 4, 50),
                            topology::CoreSet::range(4 * device, 4))
                    .ok());
  }
  const auto everywhere = [](const std::string&) { return true; };
  const auto plan = planCrossResourcePreemption(state, pod("dev", kDevice, 4, 1000), everywhere);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->node, "n") << "its victims have the lower priority";
  ASSERT_EQ(plan->victims.size(), 4U);
  topology::DeviceSet devices;
  for (const Allocation& victim : plan->victims)
    devices.insert(victim.ids.first() / 4);
  EXPECT_TRUE(topology::choosePlacement(state.node("n")->model, {kDevice, 4, devices, {}}).ok())
      << devices.toRangeString();
  // Nodes the pod may not go to are never planned on.
  const auto notN = [](const std::string& node) { return node != "n"; };
  EXPECT_EQ(planCrossResourcePreemption(state, pod("dev", kDevice, 4, 1000), notN)->node, "busier");
  // Nothing of lower priority to evict.
  EXPECT_FALSE(planCrossResourcePreemption(state, pod("dev", kDevice, 4, 50), notN).has_value());
}

TEST(CrossResourcePreemption, LeavesSameResourcePreemptionToKubeScheduler) {
  ClusterState state;
  fillTrn2(state, 0);
  // Only core pods to evict for a core pod: kube-scheduler sees that itself, and if it declined,
  // it had reasons the extender cannot see.
  EXPECT_FALSE(
      planCrossResourcePreemption(state, pod("cores", kCore, 16, 1000), [](const std::string&) {
        return true;
      }).has_value());
}

TEST(CrossResourcePreemption, NoPlanWhileAValidSetIsFreeAlready) {
  ClusterState state;
  fillTrn2(state, 0);
  ASSERT_TRUE(state.upsertNode("empty", "trn2.48xlarge").ok());
  // The pod fits on "empty" now: it waits for kube-scheduler's counts, not for victims.
  EXPECT_FALSE(
      planCrossResourcePreemption(state, pod("dev", kDevice, 4, 1000), [](const std::string&) {
        return true;
      }).has_value());
}

}  // namespace
}  // namespace torus::extender
