// ClusterState as the API sync drives it: assumptions confirmed, replaced, expired; re-lists
// dropping pods that went unseen; node updates that keep or drop allocations; and bind handing
// off to a PodBinder, giving the ids back when the hand-off fails.
#include "scheduler-extender/state/cluster_state.h"

#include <gtest/gtest.h>

#include "common/contracts/topology_annotation.h"
#include "scheduler-extender/verbs/verbs.h"
#include "tests/unit/extender/test_pods.h"

namespace torus::extender {
namespace {

using namespace std::chrono_literals;
constexpr auto kCore = topology::AllocationUnit::kCore;
constexpr auto kDevice = topology::AllocationUnit::kDevice;

PodDemand pod(const std::string& uid, topology::AllocationUnit unit, int count) {
  return testing::testPod(uid, unit, count, 0, "ml");
}

topology::CoreSet ids(std::string_view text) {
  return *topology::CoreSet::parse(text);
}

// Issue: one Node on both sides. The node as its agent discovered it (torus.dev/topology, with a
// NeuronLink down) is what the extender places on, so it never offers a set across the cut; a
// node of the same type with every link up, and the same free ids, still gets that set.
TEST(ClusterState, ANodeWithANeuronLinkDownIsPlacedAroundIt) {
  topology::Node discovered = *topology::catalogNode("inf2.48xlarge");
  std::erase(discovered.devices[4].connected, 5);
  std::erase(discovered.devices[5].connected, 4);
  auto summary = contracts::parseTopologyAnnotation(
      contracts::formatTopologyAnnotation(contracts::summarizeTopology(discovered)));
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  auto node = contracts::nodeFromTopology(*summary);
  ASSERT_TRUE(node.ok()) << node.error().message;

  ClusterState state;
  ASSERT_TRUE(state.upsertNode("cut", *node).ok());
  ASSERT_TRUE(state.upsertNode("whole", "inf2.48xlarge").ok());
  for (const char* name : {"cut", "whole"}) {  // everything but devices 4 and 5 is taken
    ASSERT_TRUE(state.record(name, pod(std::string(name) + "-a", kDevice, 4), ids("0-3")).ok());
    ASSERT_TRUE(state.record(name, pod(std::string(name) + "-b", kDevice, 4), ids("6-9")).ok());
    ASSERT_TRUE(state.record(name, pod(std::string(name) + "-c", kDevice, 2), ids("10-11")).ok());
  }
  const auto trials = state.tryPlaceMany({"whole", "cut"}, pod("p", kDevice, 2), false);
  ASSERT_TRUE(trials[0].ok()) << trials[0].error().message;
  EXPECT_EQ(trials[0]->ids.toRangeString(), "4-5");
  ASSERT_FALSE(trials[1].ok());
  EXPECT_EQ(trials[1].error().code, ErrorCode::kResourceExhausted) << trials[1].error().message;
}

// Preemption looks at every node at once: one pass groups what each node holds, the same as
// asking node by node, and a node that holds nothing is absent.
TEST(ClusterState, AllocationsByNodeGroupsWhatEachNodeHolds) {
  ClusterState state;
  for (const char* name : {"a", "b", "empty"})
    ASSERT_TRUE(state.upsertNode(name, "trn2.48xlarge").ok());
  ASSERT_TRUE(state.record("a", pod("a1", kDevice, 4), ids("0-3")).ok());
  ASSERT_TRUE(state.record("b", pod("b1", kCore, 2), ids("0-1")).ok());
  ASSERT_TRUE(state.record("a", pod("a2", kDevice, 4), ids("4-7")).ok());
  const auto byNode = state.allocationsByNode();
  EXPECT_EQ(byNode.size(), 2u);
  EXPECT_FALSE(byNode.contains("empty"));
  for (const char* name : {"a", "b"}) {
    std::vector<std::string> grouped, asked;
    for (const Allocation& allocation : byNode.at(name))
      grouped.push_back(allocation.podUid);
    for (const Allocation& allocation : state.allocationsOn(name))
      asked.push_back(allocation.podUid);
    EXPECT_EQ(grouped, asked) << name;
  }
  EXPECT_EQ(byNode.at("a").size(), 2u);
}

TEST(ClusterState, ObserveConfirmsAMatchingAssumption) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  auto reserved = state.reserve("n", pod("a", kCore, 4));
  ASSERT_TRUE(reserved.ok());
  EXPECT_TRUE(reserved->assumed);
  EXPECT_GT(reserved->allocTimeNs, 0);
  auto observed = state.observe("n", pod("a", kCore, 4), reserved->ids);
  ASSERT_TRUE(observed.ok());
  EXPECT_FALSE(observed->assumed);
  EXPECT_FALSE(state.allocationOf("a")->assumed);
  // Confirmed allocations do not expire.
  EXPECT_TRUE(state.expireAssumptions(std::chrono::steady_clock::now() + 1h, 1min).empty());
}

TEST(ClusterState, TheAnnotationWinsOverADifferentGuess) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.reserve("n", pod("a", kCore, 4)).ok());  // 0-3
  auto observed = state.observe("n", pod("a", kCore, 4), ids("8-11"));
  ASSERT_TRUE(observed.ok());
  EXPECT_EQ(state.allocationOf("a")->ids, ids("8-11"));
  EXPECT_EQ(state.node("n")->freeCores, ids("0-7,12-63"));
}

TEST(ClusterState, ConflictingObservationsAreRefused) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.observe("n", pod("a", kCore, 4), ids("0-3")).ok());
  auto clash = state.observe("n", pod("b", kCore, 4), ids("2-5"));
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error().code, ErrorCode::kAborted);
  EXPECT_NE(clash.error().message.find("cores 2-3 on n are already held"), std::string::npos);
  auto missing = state.observe("n", pod("c", kDevice, 1), ids("16"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(state.node("n")->freeCores, ids("4-63"));
}

// Kubelet gave two pods each other's promised ids; the agent corrects one annotation, then the
// other. In between, the first pod's old cores must not look free: the second one runs on them
// (seen in CI: a waiting 4-core pod bound there was refused with "Available: 0").
TEST(ClusterState, PodsThatHoldEachOthersIdsNeverShowEitherSetFree) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.record("n", pod("a", kCore, 4), ids("8-11")).ok());
  ASSERT_TRUE(state.record("n", pod("b", kCore, 4), ids("52-55")).ok());
  const topology::CoreSet freeBefore = state.node("n")->freeCores;
  auto first = state.observe("n", pod("a", kCore, 4), ids("52-55"));
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().code, ErrorCode::kAborted);
  EXPECT_EQ(state.allocationOf("a")->ids, ids("8-11")) << "keeps what it held";
  EXPECT_EQ(state.node("n")->freeCores, freeBefore);
  EXPECT_FALSE(state.observe("n", pod("b", kCore, 4), ids("8-11")).ok());
  EXPECT_EQ(state.node("n")->freeCores, freeBefore);
  // Together they fit: both move, nothing else changes.
  ASSERT_TRUE(state
                  .observeTogether({{"n", pod("a", kCore, 4), ids("52-55")},
                                    {"n", pod("b", kCore, 4), ids("8-11")}})
                  .ok());
  EXPECT_EQ(state.allocationOf("a")->ids, ids("52-55"));
  EXPECT_EQ(state.allocationOf("b")->ids, ids("8-11"));
  EXPECT_EQ(state.node("n")->freeCores, freeBefore);
  // All or none: one that does not fit leaves every pod where it was.
  ASSERT_TRUE(state.record("n", pod("c", kCore, 4), ids("0-3")).ok());
  auto mixed = state.observeTogether(
      {{"n", pod("a", kCore, 4), ids("16-19")}, {"n", pod("b", kCore, 4), ids("2-5")}});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(state.allocationOf("a")->ids, ids("52-55"));
  EXPECT_EQ(state.allocationOf("b")->ids, ids("8-11"));
  EXPECT_EQ(state.node("n")->freeCores, freeBefore - ids("0-3"));
}

TEST(ClusterState, OldAssumptionsExpireAndFreeTheirCores) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.reserve("n", pod("a", kDevice, 4)).ok());
  const auto now = std::chrono::steady_clock::now();
  EXPECT_TRUE(state.expireAssumptions(now, 1min).empty());
  const auto expired = state.expireAssumptions(now + 2min, 1min);
  ASSERT_EQ(expired.size(), 1U);
  EXPECT_EQ(expired[0].podUid, "a");
  EXPECT_EQ(state.node("n")->freeCores, ids("0-63"));
}

TEST(ClusterState, ARelistDropsConfirmedPodsNoLongerListedButKeepsAssumptions) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.observe("n", pod("gone", kCore, 4), ids("0-3")).ok());
  ASSERT_TRUE(state.observe("n", pod("kept", kCore, 4), ids("4-7")).ok());
  ASSERT_TRUE(state.reserve("n", pod("binding", kCore, 4)).ok());
  EXPECT_EQ(state.retainObserved({"kept"}), 1);
  EXPECT_FALSE(state.allocationOf("gone"));
  EXPECT_TRUE(state.allocationOf("kept"));
  EXPECT_TRUE(state.allocationOf("binding"));
}

TEST(ClusterState, NodeUpdatesKeepAllocationsUnlessTheLncChanges) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.observe("n", pod("a", kCore, 4), ids("0-3")).ok());
  auto health = state.upsertNode("n", "trn2.48xlarge", 2, ids("5"));
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(*health, 0);
  EXPECT_EQ(state.node("n")->freeCores, ids("4-19,24-63"));  // device 5 = cores 20-23
  auto lnc = state.upsertNode("n", "trn2.48xlarge", 1);
  ASSERT_TRUE(lnc.ok());
  EXPECT_EQ(*lnc, 1);
  EXPECT_FALSE(state.allocationOf("a"));
  EXPECT_EQ(state.node("n")->freeCores, ids("0-127"));
  EXPECT_EQ(state.removeNode("n"), 0);
  EXPECT_FALSE(state.hasNode("n"));
}

class RecordingBinder : public PodBinder {
 public:
  Result<void> bind(const PodDemand& demand, const Allocation& allocation,
                    std::optional<int>) override {
    bound.push_back(demand.uid + "@" + allocation.node + ":" + allocation.ids.toRangeString());
    if (fail) return makeError(ErrorCode::kUnavailable, "API down");
    return okResult();
  }
  Result<PodDemand> fetchPod(const std::string&, const std::string&) override {
    return makeError(ErrorCode::kNotFound, "not used");
  }
  void nominate(const PodDemand& demand, const std::string& node) override {
    nominated.push_back(demand.uid + "@" + node);
  }
  std::vector<std::string> bound;
  std::vector<std::string> nominated;
  bool fail = false;
};

TEST(BindPod, HandsTheIdsToTheBinderAndTakesThemBackOnFailure) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  RecordingBinder binder;
  binder.fail = true;
  auto failed = bindPod(state, pod("a", kDevice, 4), "n", &binder);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "API down");
  EXPECT_FALSE(state.allocationOf("a"));
  EXPECT_EQ(state.node("n")->freeCores, ids("0-63"));
  binder.fail = false;
  ASSERT_TRUE(bindPod(state, pod("a", kDevice, 4), "n", &binder).ok());
  ASSERT_TRUE(bindPod(state, pod("a", kDevice, 4), "n", &binder).ok());  // a retry
  EXPECT_EQ(binder.bound.size(), 3U);
  EXPECT_EQ(binder.bound[1], binder.bound[2]) << "a retry hands over the same ids";
}

}  // namespace
}  // namespace torus::extender

namespace torus::extender {
namespace {

// Kubelet refuses at admission an id its plugin last reported Unhealthy, for good
// (UnexpectedAdmissionError). A device whose cores a finished pod held through neuroncore stays
// Unhealthy as neuron until the agent has told kubelet otherwise, so the extender offers it as a
// device only then — and the same for the cores of a device a finished pod held whole.
TEST(ClusterState, OffersNothingKubeletWouldRefuse) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  // Devices 0 and 1 are free as far as the pods say, but kubelet still holds them Unhealthy.
  ASSERT_TRUE(state.setKubeletRefusal("n", {ids("0-1"), ids("60-63"), false}));
  auto sixteen = state.tryPlace("n", pod("all", kDevice, 16), false);
  ASSERT_FALSE(sixteen.ok());
  EXPECT_EQ(sixteen.error().code, ErrorCode::kResourceExhausted);
  EXPECT_FALSE(state.reserve("n", pod("all", kDevice, 16)).ok());
  auto one = state.reserve("n", pod("one", kDevice, 1));
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->ids.intersects(ids("0-1")));
  // Cores: device 15's are refused as neuroncore; a 4-core pod goes elsewhere.
  auto cores = state.reserve("n", pod("cores", kCore, 4));
  ASSERT_TRUE(cores.ok());
  EXPECT_FALSE(cores->cores.intersects(ids("60-63")));
  // Once the agent reports kubelet has them back, they are offered again.
  ASSERT_TRUE(state.setKubeletRefusal("n", {}));
  EXPECT_TRUE(state.release("one"));
  EXPECT_TRUE(state.release("cores"));
  auto all = state.tryPlace("n", pod("all", kDevice, 16), false);
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(all->ids, ids("0-15"));
  EXPECT_FALSE(state.setKubeletRefusal("unknown", {}));
}

// Nodes of one type and the same free ids place alike only when kubelet refuses the same ids.
TEST(ClusterState, ManyNodesAreNotMixedUpByWhatTheirKubeletRefuses) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("a", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.upsertNode("b", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.upsertNode("c", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.setKubeletRefusal("b", {ids("0"), {}, false}));
  ASSERT_TRUE(state.setKubeletRefusal("c", {{}, {}, true}));
  const auto trials = state.tryPlaceMany({"a", "b", "c"}, pod("p", kDevice, 16), false);
  EXPECT_TRUE(trials[0].ok());
  EXPECT_FALSE(trials[1].ok());
  EXPECT_FALSE(trials[2].ok());
  const auto small = state.tryPlaceMany({"a", "b", "c"}, pod("q", kCore, 1), false);
  EXPECT_TRUE(small[0].ok());
  EXPECT_TRUE(small[1].ok());
  EXPECT_FALSE(small[2].ok());
}

}  // namespace
}  // namespace torus::extender
