// Gangs (torus.dev/gang): the labels read from a filter request, the plan that puts all members
// in one UltraServer (else the closest network layer, else anywhere) or none of them anywhere,
// and the filter that reserves the whole plan at once, passes each member only on its node and
// nominates the others — holding nothing for a gang that does not fit whole.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/metrics/event_counters.h"
#include "scheduler-extender/gang/gang_planner.h"
#include "scheduler-extender/gang/pod_groups.h"
#include "scheduler-extender/server/extender_json.h"
#include "scheduler-extender/verbs/gang_verbs.h"
#include "tests/unit/extender/test_pods.h"

namespace torus::extender {
namespace {

constexpr auto kDevice = topology::AllocationUnit::kDevice;

PodDemand member(const std::string& uid, const std::string& gang, int size, int devices = 16) {
  PodDemand pod = testing::testPod(uid, kDevice, devices, 0, "ml");
  pod.gang = GangRef{gang, size};
  return pod;
}

NodeDomains inUltraServer(const std::string& id, const std::string& layer3 = "") {
  NodeDomains domains;
  domains.levels[0] = id;
  domains.levels[1] = layer3;
  return domains;
}

// Two UltraServers of four trn2u nodes each (us-a: a0..a3, us-b: b0..b3), all in one layer-3.
struct TwoUltraServers {
  ClusterState state;
  NodeDomainIndex domains;
  GangMembers members;
  std::vector<std::string> nodes;

  TwoUltraServers() {
    for (const std::string us : {"a", "b"}) {
      for (int i = 0; i < 4; ++i) {
        const std::string name = us + std::to_string(i);
        EXPECT_TRUE(state.upsertNode(name, "trn2u.48xlarge").ok());
        domains.set(name, inUltraServer("us-" + us, "spine-1"));
        nodes.push_back(name);
      }
    }
  }
  // A running pod taking every device of the node.
  void fill(const std::string& node) {
    ASSERT_TRUE(state.reserve(node, testing::testPod("filler-" + node, kDevice, 16)).ok());
  }
  std::vector<std::string> nodesHeldFor(const std::vector<PodDemand>& pods) const {
    std::vector<std::string> held;
    for (const PodDemand& pod : pods) {
      const auto allocation = state.allocationOf(pod.uid);
      held.push_back(allocation ? allocation->node : "");
    }
    return held;
  }
};

TEST(GangLabels, AreReadFromTheFilterRequestsPod) {
  auto args = parseExtenderArgs(
      R"({"Pod":{"metadata":{"name":"w0","namespace":"ml","uid":"u0","labels":)"
      R"({"torus.dev/gang":"train","torus.dev/gang-size":"4"}},"spec":{"containers":[{"resources":)"
      R"({"limits":{"aws.amazon.com/neuron":"16"}}}]}},"NodeNames":["a"]})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  ASSERT_TRUE(args->pod.gang.has_value());
  EXPECT_EQ(*args->pod.gang, (GangRef{"train", 4}));
  EXPECT_EQ(args->pod.gangKey(), "ml/train");
  EXPECT_TRUE(args->pod.gangProblem.empty());
}

TEST(GangLabels, MalformedOnesAreThePodsProblemNotTheRequests) {
  const auto parse = [](const std::string& labels) {
    return parseExtenderArgs(R"({"Pod":{"metadata":{"name":"w","uid":"u","labels":)" + labels +
                             R"(},"spec":{"containers":[]}},"NodeNames":["a"]})");
  };
  auto noSize = parse(R"({"torus.dev/gang":"train"})");
  ASSERT_TRUE(noSize.ok());
  EXPECT_FALSE(noSize->pod.gang);
  EXPECT_NE(noSize->pod.gangProblem.find("torus.dev/gang-size"), std::string::npos);
  auto noName = parse(R"({"torus.dev/gang-size":"4"})");
  EXPECT_NE(noName->pod.gangProblem.find("torus.dev/gang (the gang's name) is not"),
            std::string::npos);
  auto tooBig = parse(R"({"torus.dev/gang":"t","torus.dev/gang-size":"100000"})");
  EXPECT_NE(tooBig->pod.gangProblem.find("torus.dev/gang-size"), std::string::npos);
  auto notANumber = parse(R"({"torus.dev/gang":"t","torus.dev/gang-size":"four"})");
  EXPECT_FALSE(notANumber->pod.gang);
  EXPECT_FALSE(notANumber->pod.gangProblem.empty());
  auto none = parse(R"({"app":"x"})");
  EXPECT_FALSE(none->pod.gang);
  EXPECT_TRUE(none->pod.gangProblem.empty());
}

TEST(GangPlan, FourWholeNodePodsTakeTheUltraServerThatIsWhole) {
  TwoUltraServers cluster;
  cluster.fill("a2");
  std::vector<PodDemand> pods;
  for (int i = 0; i < 4; ++i)
    pods.push_back(member("w" + std::to_string(i), "train", 4));
  auto plan = planGang(cluster.state, cluster.domains, pods, {}, cluster.nodes);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::vector<std::string> sorted = plan->nodes;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"b0", "b1", "b2", "b3"}));
  EXPECT_EQ(plan->where, "UltraServer us-b");
}

TEST(GangPlan, ASmallGangFillsThePartlyUsedUltraServerFirst) {
  TwoUltraServers cluster;
  cluster.fill("a0");
  cluster.fill("a1");
  auto plan = planGang(cluster.state, cluster.domains,
                       {member("w0", "pair", 2), member("w1", "pair", 2)}, {}, cluster.nodes);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->where, "UltraServer us-a");
}

TEST(GangPlan, WhenNoUltraServerHoldsItTheClosestNetworkLayerDoes) {
  TwoUltraServers cluster;
  for (const std::string node : {"a0", "a1", "b0", "b1"})
    cluster.fill(node);
  std::vector<PodDemand> pods;
  for (int i = 0; i < 3; ++i)
    pods.push_back(member("w" + std::to_string(i), "three", 3));
  auto plan = planGang(cluster.state, cluster.domains, pods, {}, cluster.nodes);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->where, "network layer 3 spine-1");
  EXPECT_EQ(plan->nodes.size(), 3U);
}

TEST(GangPlan, AGangThatFitsNowhereWholeSaysHowManyWouldFit) {
  TwoUltraServers cluster;
  for (const std::string node : {"a0", "a1", "a2", "b0", "b1", "b2"})
    cluster.fill(node);
  auto plan = planGang(cluster.state, cluster.domains,
                       {member("w0", "t", 3), member("w1", "t", 3), member("w2", "t", 3)}, {},
                       cluster.nodes);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(plan.error().message.find("room for 2 of the 3 pods"), std::string::npos)
      << plan.error().message;
}

TEST(GangPlan, PlacedMembersPinTheirUltraServer) {
  TwoUltraServers cluster;
  cluster.fill("b0");  // us-b is the fuller one, but a member already runs in us-a
  auto plan =
      planGang(cluster.state, cluster.domains, {member("w1", "t", 2)}, {"a0"}, cluster.nodes);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->where, "UltraServer us-a");
}

double gangFilters(const char* outcome) {
  return metrics::processCounters().value(metrics::names::kGangFiltersTotal,
                                          {{"outcome", outcome}});
}

class Nominations : public PodBinder {
 public:
  Result<void> bind(const PodDemand&, const Allocation&, std::optional<int>) override {
    return okResult();
  }
  Result<PodDemand> fetchPod(const std::string&, const std::string&) override {
    return makeError(ErrorCode::kNotFound, "not used");
  }
  void nominate(const PodDemand& pod, const std::string& node) override {
    nominated[pod.uid] = node;
  }
  std::map<std::string, std::string> nominated;
};

TEST(GangFilter, NoMemberIsPlacedUntilTheWholeGangExists) {
  TwoUltraServers cluster;
  std::vector<PodDemand> pods;
  for (int i = 0; i < 4; ++i)
    pods.push_back(member("w" + std::to_string(i), "train", 4));
  for (int i = 0; i < 3; ++i)
    cluster.members.apply(pods[static_cast<std::size_t>(i)], "", false);
  const Gangs gangs{cluster.members, cluster.domains, nullptr};
  const FilterResult result = filterGangMember(cluster.state, gangs, pods[0], cluster.nodes);
  EXPECT_TRUE(result.nodeNames.empty());
  // An error, not Unschedulable: kube-scheduler retries it after its backoff whatever happens.
  EXPECT_EQ(result.error, "gang ml/train has 3 of its 4 pods; none is placed until all exist");
  EXPECT_TRUE(cluster.state.allocations().empty());
}

// Members turned away before (here: while the gang was incomplete) wait in kube-scheduler's
// backoff, and a nomination brings them back at once; a member never tried is not nominated.
TEST(GangFilter, TheFirstMemberAskedPlacesTheWholeGangAndNominatesTheMembersTurnedAway) {
  TwoUltraServers cluster;
  cluster.fill("a3");
  std::vector<PodDemand> pods;
  for (int i = 0; i < 4; ++i)
    pods.push_back(member("w" + std::to_string(i), "train", 4));
  Nominations nominations;
  const Gangs gangs{cluster.members, cluster.domains, &nominations};
  for (int i = 0; i < 3; ++i)
    cluster.members.apply(pods[static_cast<std::size_t>(i)], "", false);
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(
        filterGangMember(cluster.state, gangs, pods[static_cast<std::size_t>(i)], cluster.nodes)
            .error.empty());
  }
  cluster.members.apply(pods[0], "", false);  // a change to the pod keeps what was seen
  cluster.members.apply(pods[3], "", false);
  const double placedBefore = gangFilters("placed");
  const double onItsNodeBefore = gangFilters("on_its_node");
  const FilterResult first = filterGangMember(cluster.state, gangs, pods[2], cluster.nodes);
  ASSERT_EQ(first.nodeNames.size(), 1U);
  const std::vector<std::string> held = cluster.nodesHeldFor(pods);
  for (const std::string& node : held)
    EXPECT_EQ(node.substr(0, 1), "b") << "every member in the whole UltraServer us-b";
  EXPECT_EQ(first.nodeNames[0], held[2]);
  EXPECT_EQ(first.failed.at("a0"), "gang ml/train placed this pod on " + held[2]);
  EXPECT_EQ(nominations.nominated.size(), 2U);
  EXPECT_EQ(nominations.nominated.count("w2"), 0U) << "the pod being filtered is not nominated";
  EXPECT_EQ(nominations.nominated.count("w3"), 0U) << "never turned away: comes in its turn";
  EXPECT_EQ(nominations.nominated.at("w0"), held[0]);
  EXPECT_EQ(nominations.nominated.at("w1"), held[1]);
  // The next member kube-scheduler asks about passes on its own node only, and nothing moves.
  const FilterResult second = filterGangMember(cluster.state, gangs, pods[0], cluster.nodes);
  EXPECT_EQ(second.nodeNames, (std::vector<std::string>{held[0]}));
  EXPECT_EQ(cluster.nodesHeldFor(pods), held);
  // /metrics counts each outcome (torus_extender_gang_filters_total{outcome}).
  EXPECT_EQ(gangFilters("placed") - placedBefore, 1);
  EXPECT_EQ(gangFilters("on_its_node") - onItsNodeBefore, 1);
  // Bind of a planned member is the reservation it already has.
  auto bound = cluster.state.reserve(held[1], pods[1]);
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(bound->node, held[1]);
}

// kube-scheduler offers a sample of the feasible nodes on a large cluster, a different one each
// cycle. A member whose planned node is not offered moves to an offered node in the UltraServer
// its gang shares, and waits only when none there fits; a bound member never moves.
TEST(GangFilter, AMemberWhosePlannedNodeIsNotOfferedMovesWithinItsGangsUltraServer) {
  TwoUltraServers cluster;
  cluster.fill("b0");  // us-b is partly used: the gang of two fills it first
  std::vector<PodDemand> pods;
  for (int i = 0; i < 2; ++i) {
    pods.push_back(member("w" + std::to_string(i), "pair", 2));
    cluster.members.apply(pods.back(), "", false);
  }
  const Gangs gangs{cluster.members, cluster.domains, nullptr};
  ASSERT_EQ(filterGangMember(cluster.state, gangs, pods[0], cluster.nodes).nodeNames.size(), 1U);
  const std::string planned = cluster.nodesHeldFor(pods)[1];
  ASSERT_EQ(planned.substr(0, 1), "b");
  std::vector<std::string> offered;
  for (const std::string& node : cluster.nodes) {
    if (node != planned) offered.push_back(node);
  }
  const double movedBefore = gangFilters("moved");
  const FilterResult moved = filterGangMember(cluster.state, gangs, pods[1], offered);
  ASSERT_EQ(moved.nodeNames.size(), 1U) << moved.error;
  const std::string now = moved.nodeNames[0];
  EXPECT_EQ(now.substr(0, 1), "b") << "still in us-b with its gang, not in the whole us-a";
  EXPECT_NE(now, planned);
  EXPECT_EQ(cluster.nodesHeldFor(pods)[1], now);
  EXPECT_EQ(gangFilters("moved") - movedBefore, 1);
  EXPECT_TRUE(cluster.state.reserve(planned, testing::testPod("next", kDevice, 16)).ok())
      << "the planned node is free again";

  // Nothing else in us-b fits: the member waits for its node rather than leave its gang's
  // UltraServer.
  for (const std::string node : {"b1", "b2", "b3"}) {
    if (node != now && node != planned && node != cluster.nodesHeldFor(pods)[0]) cluster.fill(node);
  }
  std::vector<std::string> notItsNode;
  for (const std::string& node : cluster.nodes) {
    if (node != now) notItsNode.push_back(node);
  }
  const FilterResult waits = filterGangMember(cluster.state, gangs, pods[1], notItsNode);
  EXPECT_TRUE(waits.nodeNames.empty());
  EXPECT_NE(waits.error.find("did not offer this time; the pod waits for that node"),
            std::string::npos);
  EXPECT_EQ(cluster.nodesHeldFor(pods)[1], now);

  // Bound (its place confirmed by the API), a member never moves.
  const auto held = *cluster.state.allocationOf(pods[1].uid);
  ASSERT_TRUE(cluster.state.observe(held.node, pods[1], held.ids).ok());
  EXPECT_EQ(cluster.state.moveReservation(pods[1], "a0").error().code,
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(cluster.state.moveReservation(testing::testPod("none", kDevice, 1), "a0").error().code,
            ErrorCode::kNotFound);
}

// Placed on nodes that share no domain, a member may move to any offered node where it fits.
TEST(GangFilter, AMemberOfAGangInNoSharedDomainMovesToAnyOfferedNode) {
  ClusterState state;
  NodeDomainIndex domains;
  GangMembers members;
  const std::vector<std::string> nodes{"n0", "n1", "n2"};
  for (const std::string& node : nodes)
    ASSERT_TRUE(state.upsertNode(node, "trn2.48xlarge").ok());
  std::vector<PodDemand> pods{member("w0", "pair", 2), member("w1", "pair", 2)};
  for (const PodDemand& pod : pods)
    members.apply(pod, "", false);
  const Gangs gangs{members, domains, nullptr};
  ASSERT_EQ(filterGangMember(state, gangs, pods[0], nodes).nodeNames.size(), 1U);
  const std::string planned = state.allocationOf("w1")->node;
  const std::string other = state.allocationOf("w0")->node;
  const std::string free = planned != "n2" && other != "n2"   ? "n2"
                           : planned != "n1" && other != "n1" ? "n1"
                                                              : "n0";
  const FilterResult moved = filterGangMember(state, gangs, pods[1], {other, free});
  EXPECT_EQ(moved.nodeNames, (std::vector<std::string>{free}));
  EXPECT_EQ(state.allocationOf("w1")->node, free);
}

TEST(GangFilter, AGangThatDoesNotFitWholeHoldsNothing) {
  TwoUltraServers cluster;
  for (const std::string node : {"a0", "a1", "a2", "b0", "b1", "b2"})
    cluster.fill(node);
  const auto before = cluster.state.allocations().size();
  std::vector<PodDemand> pods;
  for (int i = 0; i < 3; ++i) {
    pods.push_back(member("w" + std::to_string(i), "three", 3));
    cluster.members.apply(pods.back(), "", false);
  }
  const Gangs gangs{cluster.members, cluster.domains, nullptr};
  const FilterResult result = filterGangMember(cluster.state, gangs, pods[0], cluster.nodes);
  EXPECT_TRUE(result.nodeNames.empty());
  EXPECT_EQ(result.failed.at("a3"),
            "gang ml/three (3 pods) does not fit whole: the feasible nodes have room for 2 of "
            "the 3 pods at once; none is placed and nothing is held");
  EXPECT_EQ(cluster.state.allocations().size(), before);
  // A node frees: the same gang now starts whole.
  ASSERT_TRUE(cluster.state.release("filler-a0"));
  const FilterResult now = filterGangMember(cluster.state, gangs, pods[1], cluster.nodes);
  EXPECT_EQ(now.nodeNames.size(), 1U);
  for (const std::string& node : cluster.nodesHeldFor(pods))
    EXPECT_FALSE(node.empty());
}

TEST(GangFilter, AFilterRequestCannotVouchForAPodTheApiDoesNotList) {
  TwoUltraServers cluster;
  const PodDemand forged = member("forged", "solo", 1);
  const Gangs gangs{cluster.members, cluster.domains, nullptr, false};
  const FilterResult result = filterGangMember(cluster.state, gangs, forged, cluster.nodes);
  EXPECT_TRUE(result.nodeNames.empty());
  EXPECT_NE(result.error.find("is not listed by the API yet"), std::string::npos);
  EXPECT_TRUE(cluster.state.allocations().empty());
}

TEST(GangFilter, MembersThatDisagreeOnTheSizeAreToldSo) {
  TwoUltraServers cluster;
  const PodDemand a = member("w0", "t", 2);
  const PodDemand b = member("w1", "t", 3);
  cluster.members.apply(a, "", false);
  cluster.members.apply(b, "", false);
  const Gangs gangs{cluster.members, cluster.domains, nullptr};
  const FilterResult result = filterGangMember(cluster.state, gangs, a, cluster.nodes);
  ASSERT_EQ(result.failedAndUnresolvable.size(), cluster.nodes.size());
  EXPECT_NE(result.failedAndUnresolvable.at("a0").find("the same torus.dev/gang-size"),
            std::string::npos);
}

TEST(PodGroups, AGangPolicysMinCountIsTheGangsSizeAndABasicPolicyIsNoGang) {
  using nlohmann::json;
  const json gang = json::parse(
      R"({"metadata":{"name":"g","namespace":"ml"},"spec":{"schedulingPolicy":{"gang":{"minCount":4}}}})");
  const json basic = json::parse(
      R"({"metadata":{"name":"b","namespace":"ml"},"spec":{"schedulingPolicy":{"basic":{}}}})");
  const json broken = json::parse(
      R"({"metadata":{"name":"x","namespace":"ml"},"spec":{"schedulingPolicy":{"gang":{"minCount":"4"}}}})");
  EXPECT_EQ(*gangMinCountOf(gang), 4);
  EXPECT_EQ(*gangMinCountOf(basic), std::nullopt);
  ASSERT_FALSE(gangMinCountOf(broken).ok());
  EXPECT_NE(gangMinCountOf(broken).error().message.find("gang.minCount"), std::string::npos);

  PodGroupIndex index;
  index.applyList({std::make_shared<const json>(gang), std::make_shared<const json>(basic),
                   std::make_shared<const json>(broken)});
  EXPECT_EQ(index.find("ml", "g").gangMinCount, 4);
  EXPECT_TRUE(index.find("ml", "b").found);
  EXPECT_FALSE(index.find("ml", "b").gangMinCount);
  EXPECT_FALSE(index.find("ml", "x").problem.empty());
  EXPECT_FALSE(index.find("other", "g").found);
  index.apply(gang, true);
  EXPECT_FALSE(index.find("ml", "g").found);
}

TEST(PodGroups, APodNamesItsGroupInSpecSchedulingGroup) {
  auto args =
      parseExtenderArgs(R"({"Pod":{"metadata":{"name":"w0","namespace":"ml","uid":"u0"},"spec":{)"
                        R"("schedulingGroup":{"podGroupName":"train"},"containers":[{"resources":)"
                        R"({"limits":{"aws.amazon.com/neuron":"16"}}}]}},"NodeNames":["a"]})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_EQ(args->pod.podGroup, "train");
  EXPECT_FALSE(args->pod.gang);
  EXPECT_EQ(args->pod.gangKey(), "ml/podgroup:train");
}

TEST(GangFilter, APodGroupsMinCountIsAMinimum) {
  TwoUltraServers cluster;
  std::vector<PodDemand> pods;
  for (int i = 0; i < 3; ++i) {
    PodDemand pod = testing::testPod("w" + std::to_string(i), kDevice, 16, 0, "ml");
    pod.podGroup = "train";  // as the informer lists it: the PodGroup's size is not on the pod
    cluster.members.apply(pod, "", false);
    pod.gang = GangRef{"train", 2, true};  // as filter resolves it from the PodGroup
    pods.push_back(pod);
  }
  const Gangs gangs{cluster.members, cluster.domains, nullptr};
  const FilterResult result = filterGangMember(cluster.state, gangs, pods[0], cluster.nodes);
  ASSERT_EQ(result.nodeNames.size(), 1U) << result.error;
  for (const std::string& node : cluster.nodesHeldFor(pods))
    EXPECT_FALSE(node.empty()) << "every pod there is placed, not just minCount of them";
}

TEST(GangMembers, FinishedAndDeletedPodsLeaveTheGang) {
  GangMembers members;
  const PodDemand a = member("w0", "t", 2);
  const PodDemand b = member("w1", "t", 2);
  members.apply(a, "", false);
  members.apply(b, "n1", false);
  EXPECT_EQ(members.of("ml/t").size(), 2U);
  members.apply(b, "n1", true);
  EXPECT_EQ(members.of("ml/t").size(), 1U);
  members.forget("w0");
  EXPECT_TRUE(members.of("ml/t").empty());
  EXPECT_EQ(members.gangCount(), 0U);
}

}  // namespace
}  // namespace torus::extender
