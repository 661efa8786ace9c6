#include "scheduler-extender/state/scheduling_cycles.h"

#include <gtest/gtest.h>

#include "scheduler-extender/verbs/verbs.h"
#include "tests/unit/extender/test_pods.h"

namespace torus::extender {
namespace {

using std::chrono::seconds;
using Clock = SchedulingCycles::Clock;

const Clock::time_point kStart{seconds(1000)};

TEST(SchedulingCycles, ABindGoesOnlyToANodeTheFilterPassed) {
  SchedulingCycles cycles;
  EXPECT_NE(cycles.bindRefusal("u1", "ml/a", "n1", kStart).find("has not passed the pod"),
            std::string::npos);
  cycles.filtered("u1", {"n1", "n2"}, kStart);
  EXPECT_EQ(cycles.bindRefusal("u1", "ml/a", "n2", kStart + seconds(1)), "");
  EXPECT_NE(cycles.bindRefusal("u1", "ml/a", "n3", kStart).find("did not pass that node"),
            std::string::npos);
  EXPECT_NE(cycles.bindRefusal("u2", "ml/b", "n1", kStart), "") << "another pod's filter";
  // A pod filtered again is in a new cycle: only the new answer counts.
  cycles.filtered("u1", {"n3"}, kStart);
  EXPECT_NE(cycles.bindRefusal("u1", "ml/a", "n1", kStart), "");
  EXPECT_EQ(cycles.bindRefusal("u1", "ml/a", "n3", kStart), "");
  cycles.finished("u1");
  EXPECT_NE(cycles.bindRefusal("u1", "ml/a", "n3", kStart), "") << "its cycle is over";
  EXPECT_EQ(cycles.unfilteredBindsRefused(), 5U);
}

TEST(SchedulingCycles, AnswersAreForgottenAfterTheirTtlAndBeyondCapacity) {
  SchedulingCycles cycles({.capacity = 2, .filterTtl = seconds(60), .holdTtl = seconds(5)});
  cycles.filtered("u1", {"n"}, kStart);
  EXPECT_NE(cycles.bindRefusal("u1", "ml/a", "n", kStart + seconds(61)), "");
  cycles.filtered("u2", {"n"}, kStart);
  cycles.filtered("u3", {"n"}, kStart);
  EXPECT_EQ(cycles.size(), 2U) << "u1 went: at most two pods";
  cycles.filtered("u4", {"n"}, kStart);
  EXPECT_EQ(cycles.size(), 2U);
  EXPECT_NE(cycles.bindRefusal("u2", "ml/b", "n", kStart), "") << "the oldest went first";
  EXPECT_EQ(cycles.bindRefusal("u4", "ml/d", "n", kStart), "");
  cycles.filtered("u5", {"n"}, kStart + seconds(120));
  EXPECT_EQ(cycles.size(), 1U) << "expired answers are dropped as new ones come";
}

// Pods that fit nowhere, retried by the thousand, keep no cycle: the cycle of a pod whose bind is
// slow (a volume provisioned in PreBind) is not pushed out by them, and a pod that no longer fits
// anywhere loses its earlier answer.
TEST(SchedulingCycles, AFilterThatPassedNoNodeIsNotKept) {
  SchedulingCycles cycles({.capacity = 4, .filterTtl = seconds(60), .holdTtl = seconds(5)});
  cycles.filtered("slow", {"n1"}, kStart);
  for (int pod = 0; pod < 8; ++pod)
    cycles.filtered("unschedulable-" + std::to_string(pod), {}, kStart);
  EXPECT_EQ(cycles.size(), 1U);
  EXPECT_EQ(cycles.bindRefusal("slow", "ml/slow", "n1", kStart + seconds(30)), "");
  cycles.filtered("slow", {}, kStart + seconds(31));
  EXPECT_NE(cycles.bindRefusal("slow", "ml/slow", "n1", kStart + seconds(32)), "");
}

TEST(SchedulingCycles, HoldsCountForOtherPodsUntilTheirBindOrTtl) {
  SchedulingCycles cycles({.capacity = 10, .filterTtl = seconds(60), .holdTtl = seconds(5)});
  cycles.hold("unfiltered", "n", topology::CoreSet::range(0, 4), kStart);
  EXPECT_TRUE(cycles.heldForOthers("x", kStart).empty()) << "no filter of ours, no hold";
  cycles.filtered("u1", {"n"}, kStart);
  cycles.filtered("u2", {"n", "m"}, kStart);
  cycles.hold("u1", "n", topology::CoreSet::range(0, 4), kStart);
  cycles.hold("u2", "n", topology::CoreSet::range(4, 4), kStart);
  EXPECT_EQ(cycles.heldForOthers("u1", kStart).at("n"), topology::CoreSet::range(4, 4));
  EXPECT_EQ(cycles.heldForOthers("other", kStart).at("n"), topology::CoreSet::range(0, 8));
  EXPECT_TRUE(cycles.heldForOthers("other", kStart + seconds(6)).empty());
  cycles.finished("u2");
  EXPECT_EQ(cycles.heldForOthers("other", kStart).at("n"), topology::CoreSet::range(0, 4));
  EXPECT_EQ(cycles.heldOnNodeForOthers("other", "n", kStart), topology::CoreSet::range(0, 4));
  EXPECT_TRUE(cycles.heldOnNodeForOthers("u1", "n", kStart).empty()) << "its own hold";
  EXPECT_TRUE(cycles.heldOnNodeForOthers("other", "m", kStart).empty());
  EXPECT_TRUE(cycles.heldOnNodeForOthers("other", "n", kStart + seconds(6)).empty());
}

// Two pods held on one node, their binds in the opposite order: the second pod's bind keeps clear
// of the cores held for the first, so the first still fits when its bind arrives. Holds never
// refuse: a pod that fits only on held cores takes them.
TEST(SchedulingCycles, ABindChoosesAroundTheCoresHeldForOtherPods) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("a", "trn2.48xlarge").ok());
  const PodDemand first = testing::testPod("first", topology::AllocationUnit::kDevice, 8);
  const PodDemand second = testing::testPod("second", topology::AllocationUnit::kDevice, 8);
  SchedulingCycles cycles;
  for (const PodDemand* pod : {&first, &second}) {
    cycles.filtered(pod->uid, {"a"}, kStart);
    std::optional<ExpectedPlacement> best;
    (void)filterChoosing(state, *pod, {"a"}, cycles.heldForOthers(pod->uid, kStart), best);
    ASSERT_TRUE(best.has_value());
    cycles.hold(pod->uid, best->node, best->cores, kStart);
  }
  const topology::CoreSet heldForFirst = cycles.heldOnNodeForOthers(second.uid, "a", kStart);
  ASSERT_FALSE(heldForFirst.empty());
  auto bound = bindPod(state, second, "a", nullptr, std::nullopt, heldForFirst);
  ASSERT_TRUE(bound.ok()) << bound.error().message;
  EXPECT_TRUE((bound->cores & heldForFirst).empty());
  EXPECT_TRUE(bindPod(state, first, "a", nullptr, std::nullopt,
                      cycles.heldOnNodeForOthers(first.uid, "a", kStart))
                  .ok());

  ClusterState other;
  ASSERT_TRUE(other.upsertNode("b", "trn2.48xlarge").ok());
  const PodDemand whole = testing::testPod("whole", topology::AllocationUnit::kDevice, 16);
  auto taken = bindPod(other, whole, "b", nullptr, std::nullopt, topology::CoreSet::range(0, 8));
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  EXPECT_EQ(taken->ids.size(), 16U);
}

// Two pods scored before either bind arrives: without the first pod's hold, packing sends the
// second to the node the first fills, and one of the two binds is refused.
TEST(SchedulingCycles, TheNextPodIsScoredAroundTheCoresHeldForThePodBeforeIt) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("a", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.upsertNode("b", "trn2.48xlarge").ok());
  // Node a has room for exactly one more 8-device pod.
  ASSERT_TRUE(
      bindPod(state, testing::testPod("resident", topology::AllocationUnit::kDevice, 8), "a").ok());
  const PodDemand first = testing::testPod("first", topology::AllocationUnit::kDevice, 8);
  const PodDemand second = testing::testPod("second", topology::AllocationUnit::kDevice, 8);
  SchedulingCycles cycles;
  cycles.filtered(first.uid, {"a", "b"}, kStart);
  cycles.filtered(second.uid, {"a", "b"}, kStart);

  ExpectedPlacement expected;
  HeldCores held = cycles.heldForOthers(first.uid, kStart);
  const auto firstScores = prioritize(state, first, {"a", "b"}, &held, &expected);
  ASSERT_EQ(expected.node, "a") << "packing: the fuller node";
  EXPECT_GT(firstScores[0].score, firstScores[1].score);
  cycles.hold(first.uid, expected.node, expected.cores, kStart);

  const auto unheld = prioritize(state, second, {"a", "b"});
  EXPECT_GT(unheld[0].score, unheld[1].score) << "without holds the second pod races the first";
  held = cycles.heldForOthers(second.uid, kStart);
  const auto secondScores = prioritize(state, second, {"a", "b"}, &held, &expected);
  EXPECT_EQ(expected.node, "b");
  EXPECT_EQ(secondScores[0].score, 0) << "no room on a once the first pod's cores are held";
  EXPECT_GT(secondScores[1].score, 0);
}

}  // namespace
}  // namespace torus::extender
