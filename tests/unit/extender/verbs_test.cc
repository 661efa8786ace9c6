#include "scheduler-extender/verbs/verbs.h"

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "common/topology/allowed_shapes.h"
#include "common/topology/neuronlink_graph.h"
#include "scheduler-extender/state/simulated_cluster.h"
#include "tests/unit/extender/test_pods.h"

namespace torus::extender {
namespace {

PodDemand pod(const std::string& uid, topology::AllocationUnit unit, int count) {
  return testing::testPod(uid, unit, count);
}

constexpr auto kCore = topology::AllocationUnit::kCore;
constexpr auto kDevice = topology::AllocationUnit::kDevice;

TEST(Filter, UnsupportedShapesAreUnresolvableAndFullNodesMerelyFailed) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("trn", "trn1.32xlarge").ok());
  ASSERT_TRUE(state.upsertNode("inf", "inf2.48xlarge").ok());
  const FilterResult seven = filter(state, pod("a", kDevice, 7), {"trn", "inf", "ghost"});
  EXPECT_EQ(seven.nodeNames, (std::vector<std::string>{"inf"}));
  EXPECT_NE(seven.failedAndUnresolvable.at("trn").find("does not support requests for 7 devices"),
            std::string::npos);
  EXPECT_EQ(seven.failed.at("ghost"), "not a Neuron node known to the extender");
  ASSERT_TRUE(bindPod(state, pod("b", kDevice, 16), "trn").ok());
  const FilterResult full = filter(state, pod("c", kDevice, 4), {"trn"});
  EXPECT_TRUE(full.nodeNames.empty());
  EXPECT_EQ(full.failed.count("trn"), 1U);
  EXPECT_EQ(filter(state, PodDemand{}, {"trn"}).nodeNames.size(), 1U) << "not our pod: all pass";
}

TEST(Prioritize, PrefersThePartlyUsedNode) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("empty", "trn2.48xlarge").ok());
  ASSERT_TRUE(state.upsertNode("busy", "trn2.48xlarge").ok());
  ASSERT_TRUE(bindPod(state, pod("x", kCore, 32), "busy").ok());
  const auto scores = prioritize(state, pod("y", kCore, 4), {"empty", "busy"});
  ASSERT_EQ(scores.size(), 2U);
  EXPECT_GT(scores[1].score, scores[0].score);
  for (const HostPriority& p : scores) {
    EXPECT_GE(p.score, 0);
    EXPECT_LE(p.score, 10);
  }
}

// Choosing in filter is prioritize's choice made in filter's one pass: the best node around other
// pods' holds passes alone. Where only held cores are free, nothing is chosen and every node that
// fits without the holds passes, as plain filter has it.
TEST(FilterChoosing, PassesPrioritizesBestNodeAloneAndFallsBackToFilterAroundHolds) {
  ClusterState state;
  for (const char* name : {"empty", "busy", "third"})
    ASSERT_TRUE(state.upsertNode(name, "trn2.48xlarge").ok());
  ASSERT_TRUE(state.upsertNode("small", "inf2.xlarge").ok());
  ASSERT_TRUE(bindPod(state, pod("x", kDevice, 8), "busy").ok());
  const std::vector<std::string> names{"empty", "busy", "third", "small", "ghost"};
  const PodDemand fourChips = pod("y", kDevice, 4);
  std::optional<ExpectedPlacement> best;
  const FilterResult chosen = filterChoosing(state, fourChips, names, {}, best);
  const auto scores = prioritize(state, fourChips, names);
  const auto top = std::max_element(scores.begin(), scores.end(),
                                    [](const auto& a, const auto& b) { return a.score < b.score; });
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->node, top->host);
  EXPECT_EQ(best->node, "busy");
  EXPECT_EQ(best->cores.size(), 16U) << "4 chips of 4 cores (LNC 2)";
  EXPECT_EQ(chosen.nodeNames, (std::vector<std::string>{"busy"}));
  EXPECT_EQ(chosen.failedAndUnresolvable.count("small"), 1U) << "one chip: never 4";
  EXPECT_EQ(chosen.failed.count("ghost"), 1U);

  // The rest of busy is held for another pod: the next best node is chosen around it.
  const HeldCores heldOnBusy{{"busy", state.node("busy")->freeCores}};
  EXPECT_EQ(filterChoosing(state, fourChips, names, heldOnBusy, best).nodeNames,
            (std::vector<std::string>{"empty"}));
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->node, "empty");

  // Held everywhere: no choice, and the nodes that fit without the holds pass.
  HeldCores heldEverywhere;
  for (const char* name : {"empty", "busy", "third"})
    heldEverywhere[name] = state.node(name)->freeCores;
  const FilterResult fallback = filterChoosing(state, fourChips, names, heldEverywhere, best);
  EXPECT_FALSE(best.has_value());
  EXPECT_EQ(fallback.nodeNames, filter(state, fourChips, names).nodeNames);
  EXPECT_EQ(fallback.nodeNames.size(), 3U);
}

TEST(Bind, IsIdempotentAndFreesOnRelease) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge").ok());
  auto first = bindPod(state, pod("p", kCore, 4), "n");
  ASSERT_TRUE(first.ok());
  auto again = bindPod(state, pod("p", kCore, 4), "n");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ids, first->ids);
  EXPECT_EQ(state.allocationsOn("n").size(), 1U);
  EXPECT_EQ(bindPod(state, pod("p", kCore, 4), "other").error().code, ErrorCode::kAlreadyExists);
  EXPECT_TRUE(state.release("p"));
  EXPECT_TRUE(state.allocationsOn("n").empty());
  EXPECT_EQ(state.node("n")->freeCores.size(), 64);
}

TEST(Bind, ConcurrentBindsNeverHandOutACoreTwice) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn2.48xlarge", 1).ok());  // 128 cores
  std::vector<std::jthread> threads;
  std::atomic<int> bound{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 125; ++i) {
        const int count = 1 + (i % 3);
        if (bindPod(state, pod(std::to_string(t * 1000 + i), kCore, count), "n").ok()) ++bound;
      }
    });
  }
  threads.clear();
  topology::CoreSet seen;
  int total = 0;
  for (const Allocation& allocation : state.allocationsOn("n")) {
    EXPECT_FALSE(seen.intersects(allocation.cores)) << allocation.podKey;
    seen |= allocation.cores;
    total += allocation.cores.size();
    EXPECT_TRUE(allocation.cores.isContiguous());
  }
  EXPECT_EQ(seen.size(), total);
  EXPECT_EQ(static_cast<int>(state.allocationsOn("n").size()), bound.load());
  EXPECT_LE(total, 128);
}

TEST(Preempt, KeepsOnlyVictimSetsThatFreeAValidShape) {
  ClusterState state;
  ASSERT_TRUE(state.upsertNode("n", "trn1.32xlarge").ok());
  for (const char* uid : {"row0", "row1"}) {
    ASSERT_TRUE(bindPod(state, pod(uid, kDevice, 4), "n").ok());
  }
  PodDemand rest = pod("rest", kDevice, 8);
  rest.priority = 500;  // more important than the preemptor: never a victim
  ASSERT_TRUE(bindPod(state, rest, "n").ok());
  for (const Allocation& allocation : state.allocationsOn("n")) {
    PodDemand seen = allocation.podUid == "rest" ? rest : pod(allocation.podUid, kDevice, 4);
    ASSERT_TRUE(state.observe("n", seen, allocation.ids).ok());  // seen running on the API
  }
  PodDemand wants8 = pod("new", kDevice, 8);
  wants8.priority = 100;
  // kube-scheduler proposed one row: the extender adds the other lower-priority row.
  const auto widened = preempt(state, wants8, {{"n", {"row0"}}});
  ASSERT_EQ(widened.count("n"), 1U);
  EXPECT_EQ(std::set<std::string>(widened.at("n").begin(), widened.at("n").end()),
            (std::set<std::string>{"row0", "row1"}));
  EXPECT_EQ(preempt(state, wants8, {{"n", {"row0", "row1"}}}).at("n"),
            (std::vector<std::string>{"row0", "row1"}));
  wants8.priority = 0;  // no more important than anything there
  EXPECT_TRUE(preempt(state, wants8, {{"n", {"row0"}}}).empty());
  EXPECT_TRUE(preempt(state, wants8, {{"unknown", {"row0"}}}).empty());
}

// Exhaustively on small nodes: filter passes exactly when some allowed, connected, free set
// exists, whatever the mix of pods already bound.
TEST(Filter, PassesIffAValidSetExistsOnSmallNodes) {
  for (const char* type : {"inf1.6xlarge", "inf2.24xlarge"}) {
    const topology::Node model = *topology::catalogNode(type);
    const auto graph = topology::NeuronLinkGraph::fromNode(model);
    const int devices = model.deviceCount();
    for (int mask = 0; mask < (1 << devices); ++mask) {
      ClusterState state;
      ASSERT_TRUE(state.upsertNode("n", type).ok());
      // Fill the node with one-device pods, then let the ones on the devices to free leave.
      for (int d = 0; d < devices; ++d) {
        ASSERT_TRUE(bindPod(state, pod("s" + std::to_string(d), kDevice, 1), "n").ok());
      }
      for (const Allocation& allocation : state.allocationsOn("n")) {
        if ((mask >> allocation.ids.first()) & 1) state.release(allocation.podUid);
      }
      topology::DeviceSet free;
      for (int d = 0; d < devices; ++d) {
        if ((mask >> d) & 1) free.insert(d);
      }
      for (int count = 1; count <= devices; ++count) {
        bool exists = false;
        for (const auto& set : topology::allowedDeviceSets(topology::shapeRulesOf(model), count)) {
          exists = exists || (set.isSubsetOf(free) && graph.isConnected(set));
        }
        const bool passed = !filter(state, pod("q", kDevice, count), {"n"}).nodeNames.empty();
        ASSERT_EQ(passed, exists) << type << " free=" << free.toRangeString() << " count=" << count;
      }
    }
  }
}

TEST(SimulatedCluster, ParsesTypesAndNamesNodes) {
  auto spec = parseSimulatedCluster("trn2.48xlarge:3, inf2.48xlarge:2");
  ASSERT_TRUE(spec.ok());
  ClusterState state;
  EXPECT_EQ(*addSimulatedNodes(state, *spec), 5);
  EXPECT_TRUE(state.hasNode("sim-trn2.48xlarge-2"));
  EXPECT_TRUE(state.hasNode("sim-inf2.48xlarge-0"));
  EXPECT_FALSE(parseSimulatedCluster("trn9:3").ok());
  EXPECT_FALSE(parseSimulatedCluster("trn2.48xlarge:0").ok());
  EXPECT_FALSE(parseSimulatedCluster("").ok());
}

}  // namespace
}  // namespace torus::extender

namespace torus::extender {
namespace {

// The per-request memo must never change an answer: many nodes at once give exactly what each
// node gives alone, on a cluster churned into many different free sets.
TEST(ClusterState, PlacingManyNodesAtOnceMatchesOneByOne) {
  ClusterState state;
  ASSERT_TRUE(addSimulatedNodes(state, {{"trn2.48xlarge", 40}, {"inf2.48xlarge", 20}}).ok());
  const std::vector<std::string> nodes = state.nodeNames();
  std::mt19937 random(5);
  for (int i = 0; i < 400; ++i) {
    const bool devices = random() % 3 == 0;
    const int count = devices ? 1 << (random() % 3) : 1 + static_cast<int>(random() % 12);
    (void)bindPod(state, pod(std::to_string(i), devices ? kDevice : kCore, count),
                  nodes[random() % nodes.size()]);
    if (random() % 4 == 0) state.release(std::to_string(random() % (i + 1)));
  }
  for (const PodDemand& demand :
       {pod("q1", kCore, 4), pod("q2", kDevice, 4), pod("q3", kCore, 9)}) {
    const auto many = state.tryPlaceMany(nodes, demand, true);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto one = state.tryPlace(nodes[i], demand, true);
      ASSERT_EQ(one.ok(), many[i].ok()) << nodes[i];
      if (one.ok()) {
        EXPECT_EQ(one->ids, many[i]->ids) << nodes[i];
        EXPECT_EQ(one->score, many[i]->score) << nodes[i];
      } else {
        EXPECT_EQ(one.error().message, many[i].error().message);
      }
    }
  }
}

}  // namespace
}  // namespace torus::extender
