// The UltraServer operator's allocator and model: nodes grouped from the agents' labels, workload
// specs read strictly, and the allocation rules (whole, all or nothing, best fit, oldest first,
// the two-phase record, the three failure strategies).
#include "ultraserver-operator/model/allocator.h"

#include <map>
#include <memory>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/contracts/neuron_names.h"
#include "tests/unit/ultraserver/operator_fixtures.h"

namespace torus::ultraserver {
namespace {

using nlohmann::json;

// `count` UltraServers of four trn2u nodes: us<k> holds nodes n<k>-0 .. n<k>-3.
// The nodes in `notReady` have not been Ready since `since`.
std::vector<UltraServer> cluster(int count, const std::set<std::string>& notReady = {},
                                 const std::string& since = "2026-11-27T09:00:00Z") {
  std::vector<MemberNode> members;
  for (int k = 0; k < count; ++k) {
    for (int id = 0; id < 4; ++id) {
      const std::string name = "n" + std::to_string(k) + "-" + std::to_string(id);
      auto member =
          memberOf(nodeObject(name, "AB" + std::to_string(k), id, !notReady.count(name), since));
      members.push_back(*member);
    }
  }
  return groupUltraServers(members);
}

std::vector<Allocation> of(const AllocationPlan& plan, const std::string& ref) {
  std::vector<Allocation> mine;
  for (const Allocation& allocation : plan.allocations) {
    if (allocation.workloadRef == ref) mine.push_back(allocation);
  }
  return mine;
}

// Runs passes until nothing changes (the controller's passes), returning the last plan.
AllocationPlan settle(const std::vector<UltraServer>& servers,
                      const std::vector<Workload>& workloads, std::vector<Allocation> current) {
  AllocationPlan plan;
  for (int pass = 0; pass < 4; ++pass) {
    plan = planAllocations(servers, workloads, current, "2026-11-27T10:00:00Z");
    current = plan.allocations;
  }
  return plan;
}

TEST(UltraServerModel, NodesGroupByServerIdInNodeOrder) {
  std::vector<MemberNode> members;
  for (const int id : {3, 1, 0, 2})
    members.push_back(*memberOf(nodeObject("node-" + std::to_string(id), "00F0A1", id)));
  members.push_back(*memberOf(nodeObject("other", "00F0B2", 0)));
  const auto servers = groupUltraServers(members);
  ASSERT_EQ(servers.size(), 2U);
  EXPECT_EQ(servers[0].name, "us-00f0a1");
  EXPECT_EQ(servers[0].instanceType, "trn2u.48xlarge");
  ASSERT_EQ(servers[0].nodes.size(), 4U);
  for (int id = 0; id < 4; ++id)
    EXPECT_EQ(servers[0].nodes[static_cast<std::size_t>(id)].nodeId, id);
  EXPECT_EQ(servers[1].nodes.size(), 1U);
}

TEST(UltraServerModel, NodesOutsideAnUltraServerAreNotMembers) {
  EXPECT_FALSE(memberOf(json{{"metadata", {{"name", "trn2"}}}}));
  json badId = nodeObject("x", "AB", 0);
  badId["metadata"]["labels"]["neuron.amazonaws.com/ultraserver-node-id-4"] = "7";
  EXPECT_FALSE(memberOf(badId));
  json cordoned = nodeObject("x", "AB", 0);
  cordoned["spec"]["unschedulable"] = true;
  EXPECT_FALSE(memberOf(cordoned)->healthy());
  EXPECT_FALSE(memberOf(nodeObject("x", "AB", 0, false))->healthy());
}

TEST(UltraServerModel, WorkloadSpecsAreReadStrictly) {
  json object = {{"metadata", {{"namespace", "ml"}, {"name", "train"}, {"uid", "u1"}}},
                 {"spec",
                  {{"instanceType", "trn2u.48xlarge"},
                   {"topologySize", 4},
                   {"serverCount", 2},
                   {"allocationPolicy", {{"failureStrategy", "ReplaceAffected"}}},
                   {"config", {{"logicalNeuronCore", 1}}}}}};
  Workload parsed = parseWorkload(object);
  EXPECT_EQ(parsed.invalid, "");
  EXPECT_EQ(parsed.strategy, FailureStrategy::kMigrateAffected) << "AWS's documented alias";
  EXPECT_EQ(parsed.claimTemplate, "train") << "defaults to the workload's name";
  EXPECT_EQ(parsed.logicalNeuronCore, 1);

  object["spec"]["topologySize"] = 3;
  EXPECT_EQ(parseWorkload(object).invalid,
            "spec.topologySize 3 is not an UltraServer configuration: 1, 2 or 4 nodes");
  object["spec"]["topologySize"] = 4;
  object["spec"]["allocationPolicy"]["failureStrategy"] = "Retry";
  EXPECT_NE(parseWorkload(object).invalid.find("failureStrategy \"Retry\""), std::string::npos);
  object["spec"]["allocationPolicy"]["failureStrategy"] = "NoOp";
  object["spec"]["serverCount"] = "2";
  EXPECT_EQ(parseWorkload(object).invalid, "spec.serverCount is not an integer");
  object["spec"]["serverCount"] = 2;
  object["metadata"]["name"] = std::string(70, 'w');
  EXPECT_NE(parseWorkload(object).invalid.find("64 characters"), std::string::npos);
  object["metadata"]["name"] = "train";
  // A template name the API server would refuse: the workload says so before anything is held.
  for (const auto& [name, why] : std::vector<std::pair<std::string, std::string>>{
           {"Bad_Name", "only lower-case letters, digits, '-' and '.' are allowed"},
           {std::string(254, 'a'), "longer than 253 characters"},
           {"-train", "must start and end with a letter or digit"},
           {"train..v2", "an empty part between dots"}}) {
    object["spec"]["resourceClaimTemplate"]["name"] = name;
    const std::string invalid = parseWorkload(object).invalid;
    EXPECT_EQ(invalid.rfind("spec.resourceClaimTemplate.name \"", 0), 0U) << invalid;
    EXPECT_NE(invalid.find(why), std::string::npos) << invalid;
  }
  object["spec"]["resourceClaimTemplate"]["name"] = "train.v2-claims";
  EXPECT_EQ(parseWorkload(object).invalid, "");
}

TEST(Allocator, AFourNodeWorkloadTakesAWholeUltraServerInTwoPhases) {
  const auto servers = cluster(1);
  const std::vector<Workload> workloads = {workload("train", 4, 1, "t1")};
  AllocationPlan first = planAllocations(servers, workloads, {}, "now");
  ASSERT_EQ(first.allocations.size(), 1U);
  EXPECT_EQ(first.allocations[0].phase, contracts::kAllocationPending);
  EXPECT_EQ(first.allocations[0].nodes, (std::vector<std::string>{"n0-0", "n0-1", "n0-2", "n0-3"}));
  EXPECT_EQ(first.allocations[0].leader(), "n0-0");
  EXPECT_EQ(first.outcomes["ml/train"].state, WorkloadState::kAllocating);

  AllocationPlan second = planAllocations(servers, workloads, first.allocations, "later");
  ASSERT_EQ(second.allocations.size(), 1U);
  EXPECT_EQ(second.allocations[0].phase, contracts::kAllocationBound);
  EXPECT_EQ(second.allocations[0].allocatedAt, "now") << "confirming keeps the time";
  EXPECT_EQ(second.outcomes["ml/train"].state, WorkloadState::kAllocated);
  EXPECT_EQ(second.outcomes["ml/train"].allocatedUltraServers, std::vector<std::string>{"us-ab0"});
}

TEST(Allocator, ASecondWorkloadWaitsWholeAndSaysWhy) {
  const auto servers = cluster(1);
  const std::vector<Workload> workloads = {workload("first", 4, 1, "t1"),
                                           workload("second", 4, 1, "t2")};
  const AllocationPlan plan = settle(servers, workloads, {});
  EXPECT_EQ(of(plan, "ml/first").size(), 1U);
  EXPECT_TRUE(of(plan, "ml/second").empty()) << "holds nothing while it waits";
  const WorkloadOutcome& waiting = plan.outcomes.at("ml/second");
  EXPECT_EQ(waiting.state, WorkloadState::kPending);
  EXPECT_EQ(waiting.message,
            "waiting for 1 UltraServer of trn2u.48xlarge with 4 free, Ready nodes (us-ab0: 0 of "
            "4 free, held by ml/first)");

  // The first is deleted (its pods gone): the second gets the UltraServer.
  const AllocationPlan after = settle(servers, {workloads[1]}, plan.allocations);
  EXPECT_EQ(after.outcomes.at("ml/second").state, WorkloadState::kAllocated);
}

json claimObject(const std::string& name, const std::string& node, const std::string& workload = "",
                 bool adminAccess = false, const std::string& driver = "neuron.aws.com") {
  json claim = {{"metadata", {{"name", name}, {"namespace", "team"}}},
                {"status",
                 {{"allocation",
                   {{"devices",
                     {{"results", json::array({{{"driver", driver},
                                                {"pool", node},
                                                {"device", "chip-0"},
                                                {"adminAccess", adminAccess}}})}}}}}}}};
  if (!workload.empty())
    claim["metadata"]["annotations"][contracts::kWorkloadAnnotation] = workload;
  return claim;
}

TEST(UltraServerModel, NodesAreBusyWithAllocatedClaimsOfNoWorkload) {
  std::map<std::string, std::shared_ptr<const json>> claims;
  const auto add = [&](const json& claim) {
    claims[claim["metadata"]["name"].get<std::string>()] = std::make_shared<const json>(claim);
  };
  add(claimObject("plain", "n0-1"));
  add(claimObject("ours", "n0-2", "ml/train"));
  add(claimObject("monitor", "n0-3", "", true));
  add(claimObject("gpu", "n1-0", "", false, "gpu.example.com"));
  add(json{{"metadata", {{"name", "pending"}, {"namespace", "team"}}}});  // not allocated yet
  const auto busy = nodesBusyWithClaims(claims);
  ASSERT_EQ(busy.size(), 1U);
  EXPECT_EQ(busy.at("n0-1").claim, "ResourceClaim team/plain");
  EXPECT_TRUE(busy.at("n0-1").beforeTaint) << "it does not tolerate the reserved taint";

  // One that tolerates the reserved taint forced its way in; an innocent one on the same node
  // is the one named.
  json forced = claimObject("forced", "n0-3");
  forced["spec"]["devices"]["requests"] =
      json::array({{{"name", "chips"},
                    {"exactly",
                     {{"deviceClassName", "neuron.aws.com"},
                      {"tolerations", json::array({{{"key", "neuron.aws.com/reserved"},
                                                    {"operator", "Exists"},
                                                    {"effect", "NoSchedule"}}})}}}}});
  add(forced);
  EXPECT_FALSE(nodesBusyWithClaims(claims).at("n0-3").beforeTaint);
  json anything = forced;
  anything["metadata"]["name"] = "anything";
  anything["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] =
      json::array({{{"operator", "Exists"}}});
  add(anything);
  EXPECT_FALSE(nodesBusyWithClaims(claims).at("n0-3").beforeTaint) << "tolerates every taint";
  add(claimObject("innocent", "n0-3"));
  EXPECT_EQ(nodesBusyWithClaims(claims).at("n0-3").claim, "ResourceClaim team/innocent");

  // When it came: its allocation time where the API server keeps one, else when it was made.
  json timed = claimObject("timed", "n1-1");
  timed["metadata"]["creationTimestamp"] = "2026-11-27T09:00:00Z";
  add(timed);
  EXPECT_EQ(nodesBusyWithClaims(claims).at("n1-1").since, "2026-11-27T09:00:00Z");
  timed["status"]["allocation"]["allocationTimestamp"] = "2026-11-27T09:30:00Z";
  add(timed);
  EXPECT_EQ(nodesBusyWithClaims(claims).at("n1-1").since, "2026-11-27T09:30:00Z");
}

// A workload's pods are the owners of the claims made from its template (annotated with it, in
// its namespace); a claim with the same annotation in another namespace, or owned by something
// other than a Pod, makes nobody the workload's pod.
TEST(UltraServerModel, AWorkloadsPodsAreTheOwnersOfItsClaims) {
  std::map<std::string, std::shared_ptr<const json>> claims;
  const auto add = [&](const std::string& name, const std::string& nameSpace,
                       const std::string& workload, const std::string& ownerKind,
                       const std::string& uid) {
    json claim = claimObject(name, "n0-0", workload);
    claim["metadata"]["namespace"] = nameSpace;
    claim["metadata"]["ownerReferences"] = json::array(
        {{{"apiVersion", "v1"}, {"kind", ownerKind}, {"name", name + "-pod"}, {"uid", uid}}});
    claims[nameSpace + "/" + name] = std::make_shared<const json>(claim);
  };
  add("a", "ml", "ml/train", "Pod", "uid-a");
  add("b", "ml", "ml/train", "Pod", "uid-b");
  add("other", "ml", "ml/other", "Pod", "uid-other");
  add("forged", "team", "ml/train", "Pod", "uid-forged");
  add("plain", "ml", "", "Pod", "uid-plain");
  add("odd", "ml", "ml/train", "ConfigMap", "uid-odd");
  EXPECT_EQ(podsOfWorkload(claims, workload("train", 4, 1, "t1")),
            (std::set<std::string>{"uid-a", "uid-b"}));
}

// A stranger's claim on one node of the only UltraServer: the workload waits, naming the claim,
// instead of reserving a node whose devices it cannot have; with a second UltraServer it goes
// there; once the claim is gone it is reserved.
TEST(Allocator, AnUltraServerBusyWithAStrangersClaimIsNotReserved) {
  auto servers = cluster(1);
  servers[0].nodes[1].busyWith = "ResourceClaim team/plain";
  const std::vector<Workload> workloads = {workload("train", 4, 1, "t1")};
  const AllocationPlan waiting = settle(servers, workloads, {});
  EXPECT_TRUE(of(waiting, "ml/train").empty());
  EXPECT_EQ(waiting.outcomes.at("ml/train").state, WorkloadState::kPending);
  EXPECT_EQ(waiting.outcomes.at("ml/train").message,
            "waiting for 1 UltraServer of trn2u.48xlarge with 4 free, Ready nodes (us-ab0: 3 of "
            "4 free, busy: n0-1 (ResourceClaim team/plain))");

  auto two = cluster(2);
  two[0].nodes[1].busyWith = "ResourceClaim team/plain";
  const AllocationPlan elsewhere = settle(two, workloads, {});
  ASSERT_EQ(of(elsewhere, "ml/train").size(), 1U);
  EXPECT_EQ(of(elsewhere, "ml/train")[0].ultraServer, "us-ab1");

  servers[0].nodes[1].busyWith.clear();
  EXPECT_EQ(settle(servers, workloads, {}).outcomes.at("ml/train").state,
            WorkloadState::kAllocated);
}

// A stranger's claim allocated on a reserved node (before the taint reached it) can never prepare,
// and the workload's claim can never be allocated there: the reservation gives way, the workload
// takes the other UltraServer, and comes back to none of the stranger's nodes.
TEST(Allocator, AReservationWithAStrangersClaimOnItGivesWay) {
  const std::vector<Workload> workloads = {workload("train", 4, 1, "t1")};
  const AllocationPlan running = settle(cluster(1), workloads, {});
  ASSERT_EQ(running.allocations.size(), 1U);
  auto servers = cluster(2);
  servers[0].nodes[1].busyWith = "ResourceClaim team/plain";
  // One that tolerates the reserved taint forced its way in: refused at prepare, and the
  // reservation stands.
  const AllocationPlan forced = planAllocations(servers, workloads, running.allocations, "t9");
  EXPECT_EQ(forced.allocations, running.allocations);
  EXPECT_FALSE(forced.outcomes.at("ml/train").restartAllPods);
  servers[0].nodes[1].busyBeforeTaint = true;
  const AllocationPlan plan = planAllocations(servers, workloads, running.allocations, "t9");
  const WorkloadOutcome& outcome = plan.outcomes.at("ml/train");
  EXPECT_TRUE(outcome.restartAllPods);
  EXPECT_EQ(outcome.degradedReason, "ReservationTaken");
  EXPECT_NE(outcome.degradedMessage.find("ResourceClaim team/plain"), std::string::npos);
  ASSERT_EQ(of(plan, "ml/train").size(), 1U);
  EXPECT_EQ(of(plan, "ml/train")[0].ultraServer, servers[1].name) << "placed again elsewhere";
}

// Only a claim that came before the reservation makes it give way: one allocated (or, where the
// API server keeps no allocation time, made) after the allocation was recorded met a reserved
// node, and the running workload keeps its UltraServer and its pods.
TEST(Allocator, AStrangersClaimAllocatedAfterTheReservationNeverTakesIt) {
  const std::vector<Workload> workloads = {workload("train", 4, 1, "t1")};
  const AllocationPlan running = settle(cluster(1), workloads, {});
  ASSERT_EQ(running.allocations.size(), 1U);
  ASSERT_EQ(running.allocations[0].allocatedAt, "2026-11-27T10:00:00Z");
  auto servers = cluster(2);
  servers[0].nodes[1].busyWith = "ResourceClaim team/plain";
  servers[0].nodes[1].busyBeforeTaint = true;
  servers[0].nodes[1].busySince = "2026-11-27T10:05:00Z";
  const AllocationPlan plan = planAllocations(servers, workloads, running.allocations, "t9");
  EXPECT_EQ(plan.allocations, running.allocations);
  EXPECT_FALSE(plan.outcomes.at("ml/train").restartAllPods);
  EXPECT_TRUE(plan.outcomes.at("ml/train").degradedReason.empty());
  // The same claim from before the reservation was recorded: it gives way.
  servers[0].nodes[1].busySince = "2026-11-27T09:59:59Z";
  EXPECT_EQ(planAllocations(servers, workloads, running.allocations, "t9")
                .outcomes.at("ml/train")
                .degradedReason,
            "ReservationTaken");
}

TEST(Allocator, AllOrNothingAcrossUltraServers) {
  const auto servers = cluster(2);
  // Two UltraServers asked for, one free: nothing is held.
  const std::vector<Workload> workloads = {workload("small", 1, 1, "t1"),
                                           workload("big", 4, 2, "t2")};
  const AllocationPlan plan = settle(servers, workloads, {});
  EXPECT_EQ(of(plan, "ml/small").size(), 1U);
  EXPECT_TRUE(of(plan, "ml/big").empty());
  EXPECT_EQ(plan.outcomes.at("ml/big").state, WorkloadState::kPending);
}

TEST(Allocator, BestFitKeepsWholeUltraServersWholeAndPairsTogether) {
  const auto servers = cluster(2);
  const std::vector<Workload> workloads = {workload("a", 1, 1, "t1"), workload("b", 1, 1, "t2"),
                                           workload("pair", 2, 1, "t3"),
                                           workload("whole", 4, 1, "t4")};
  const AllocationPlan plan = settle(servers, workloads, {});
  // a and b share one NeuronLink pair; the pair takes the other pair of the same UltraServer;
  // the 4-node workload still finds the second UltraServer whole.
  EXPECT_EQ(of(plan, "ml/a")[0].nodes, std::vector<std::string>{"n0-0"});
  EXPECT_EQ(of(plan, "ml/b")[0].nodes, std::vector<std::string>{"n0-1"});
  EXPECT_EQ(of(plan, "ml/pair")[0].nodes, (std::vector<std::string>{"n0-2", "n0-3"}));
  EXPECT_EQ(of(plan, "ml/whole")[0].ultraServer, "us-ab1");
  for (const auto& [ref, outcome] : plan.outcomes)
    EXPECT_EQ(outcome.state, WorkloadState::kAllocated) << ref;
}

// A pair is the nodes sharing server-id-2, whatever their node ids (X2V pairs 0 with 2); nodes
// without that label are in no pair, so a 2-node workload waits rather than take two nodes that
// may have no NeuronLink between them.
TEST(Allocator, PairsAreTheNodesSharingServerId2AndNoneIsInvented) {
  std::vector<MemberNode> members;
  for (int id = 0; id < 4; ++id) {
    json node = nodeObject("v" + std::to_string(id), "CD", id);
    node["metadata"]["labels"]["neuron.amazonaws.com/ultraserver-server-id-2"] =
        id % 2 == 0 ? "CDeven" : "CDodd";
    members.push_back(*memberOf(node));
  }
  const std::vector<Workload> pair = {workload("pair", 2, 1, "t1")};
  const AllocationPlan vertical = settle(groupUltraServers(members), pair, {});
  EXPECT_EQ(of(vertical, "ml/pair")[0].nodes, (std::vector<std::string>{"v0", "v2"}));

  for (MemberNode& member : members)
    member.pairId.clear();
  const AllocationPlan unpaired = settle(groupUltraServers(members), pair, {});
  EXPECT_TRUE(of(unpaired, "ml/pair").empty());
  EXPECT_EQ(unpaired.outcomes.at("ml/pair").state, WorkloadState::kPending);
}

TEST(Allocator, AHalfWrittenRecordStartsAgain) {
  const auto servers = cluster(2);
  const std::vector<Workload> workloads = {workload("big", 4, 2, "t1")};
  AllocationPlan first = planAllocations(servers, workloads, {}, "now");
  ASSERT_EQ(first.allocations.size(), 2U);
  // Only one of the two Pending records reached the API before the writer died.
  const std::vector<Allocation> partial = {first.allocations[0]};
  const AllocationPlan next = planAllocations(servers, workloads, partial, "later");
  ASSERT_EQ(next.allocations.size(), 2U);
  for (const Allocation& allocation : next.allocations)
    EXPECT_EQ(allocation.phase, contracts::kAllocationPending) << "placed afresh, not confirmed";
  EXPECT_FALSE(next.outcomes.at("ml/big").restartAllPods) << "nothing was Bound: no pod ran";
}

TEST(Allocator, NoOpReportsAFailedNodeAndKeepsEverything) {
  const std::vector<Workload> workloads = {workload("train", 4, 1, "t1")};
  const AllocationPlan running = settle(cluster(1), workloads, {});
  const AllocationPlan plan = settle(cluster(1, {"n0-2"}), workloads, running.allocations);
  EXPECT_EQ(plan.allocations, running.allocations);
  const WorkloadOutcome& outcome = plan.outcomes.at("ml/train");
  EXPECT_EQ(outcome.state, WorkloadState::kAllocated);
  EXPECT_TRUE(outcome.degraded);
  EXPECT_EQ(outcome.degradedReason, "NodeNotReady");
  EXPECT_FALSE(outcome.restartAllPods);
  EXPECT_TRUE(outcome.restartPodsOn.empty());
}

TEST(Allocator, RestartAllReleasesEverythingAndTakesItBackWhole) {
  const std::vector<Workload> workloads = {
      workload("train", 4, 1, "t1", FailureStrategy::kRestartAll)};
  const AllocationPlan running = settle(cluster(1), workloads, {});
  const AllocationPlan failed =
      planAllocations(cluster(1, {"n0-2"}), workloads, running.allocations, "t9");
  EXPECT_TRUE(failed.allocations.empty());
  EXPECT_TRUE(failed.outcomes.at("ml/train").restartAllPods);
  EXPECT_EQ(failed.outcomes.at("ml/train").state, WorkloadState::kPending);
  // The node comes back: the UltraServer is whole again and the workload takes it.
  const AllocationPlan back = settle(cluster(1), workloads, failed.allocations);
  EXPECT_EQ(back.outcomes.at("ml/train").state, WorkloadState::kAllocated);
  EXPECT_FALSE(back.outcomes.at("ml/train").restartAllPods) << "pods restart once, not again";
}

// A node that is not Ready moves nothing until the grace period has passed since its Ready
// condition changed (a kubelet restart); the pass that finds it over acts, once.
TEST(Allocator, FailureStrategiesWaitOutTheGracePeriod) {
  using std::chrono::seconds;
  const std::vector<Workload> workloads = {
      workload("train", 4, 1, "t1", FailureStrategy::kRestartAll)};
  const AllocationPlan running = settle(cluster(1), workloads, {});
  const auto lost = cluster(1, {"n0-2"}, "2026-11-27T10:00:00Z");

  const AllocationPlan within =
      planAllocations(lost, workloads, running.allocations, "2026-11-27T10:01:30Z", seconds(120));
  const WorkloadOutcome& waiting = within.outcomes.at("ml/train");
  EXPECT_EQ(within.allocations, running.allocations) << "nothing released within the grace";
  EXPECT_FALSE(waiting.restartAllPods);
  EXPECT_TRUE(waiting.degraded);
  EXPECT_EQ(waiting.degradedReason, "NodeNotReady");
  EXPECT_NE(waiting.degradedMessage.find("n0-2 (since 2026-11-27T10:00:00Z)"), std::string::npos)
      << waiting.degradedMessage;
  EXPECT_EQ(within.recheckIn, seconds(30)) << "the pass is due when the grace ends";
  EXPECT_TRUE(of(settle(lost, {workload("next", 1, 1, "t2")}, {}), "ml/next").size() == 1)
      << "the not-Ready node is not offered, the three others are";

  const AllocationPlan over =
      planAllocations(lost, workloads, running.allocations, "2026-11-27T10:02:00Z", seconds(120));
  EXPECT_TRUE(over.allocations.empty());
  EXPECT_TRUE(over.outcomes.at("ml/train").restartAllPods);
  EXPECT_EQ(over.outcomes.at("ml/train").degradedReason, "RestartAll");
  EXPECT_FALSE(over.recheckIn);
}

// MigrateAffected moves only a group whose node's grace is over; one still within stays.
TEST(Allocator, MigrateAffectedMovesOnlyGroupsPastTheirGrace) {
  using std::chrono::seconds;
  const std::vector<Workload> workloads = {
      workload("train", 1, 2, "t1", FailureStrategy::kMigrateAffected)};
  const AllocationPlan running = settle(cluster(2), workloads, {});
  ASSERT_EQ(running.allocations.size(), 2U);
  auto servers = cluster(2);
  for (UltraServer& server : servers) {
    for (MemberNode& member : server.nodes) {
      if (member.name != running.allocations[0].leader() &&
          member.name != running.allocations[1].leader()) {
        continue;
      }
      member.ready = false;
      member.notReadySince = member.name == running.allocations[0].leader()
                                 ? "2026-11-27T09:00:00Z"   // long over
                                 : "2026-11-27T09:59:00Z";  // 60 s of 120
    }
  }
  const AllocationPlan plan = planAllocations(servers, workloads, running.allocations,
                                              "2026-11-27T10:00:00Z", seconds(120));
  const WorkloadOutcome& outcome = plan.outcomes.at("ml/train");
  EXPECT_EQ(outcome.restartPodsOn, std::vector<std::string>{running.allocations[0].leader()});
  EXPECT_EQ(outcome.degradedReason, "MigrateAffected");
  EXPECT_EQ(plan.recheckIn, seconds(60));
  bool keptWaiting = false;
  for (const Allocation& allocation : of(plan, "ml/train"))
    keptWaiting = keptWaiting || allocation.leader() == running.allocations[1].leader();
  EXPECT_TRUE(keptWaiting) << "the group within its grace is kept";
}

// A cordon keeps new workloads off a node but moves nothing: under RestartAll a cordoned node of a
// running workload restarts no pod, and no new workload is given it.
TEST(Allocator, ACordonRestartsNothingAndKeepsNewWorkloadsOff) {
  const std::vector<Workload> workloads = {
      workload("train", 4, 1, "t1", FailureStrategy::kRestartAll)};
  const AllocationPlan running = settle(cluster(1), workloads, {});
  auto cordoned = cluster(1);
  cordoned[0].nodes[2].schedulable = false;
  const AllocationPlan after = planAllocations(cordoned, workloads, running.allocations, "t9");
  EXPECT_EQ(after.allocations.size(), 1U);
  EXPECT_FALSE(after.outcomes.at("ml/train").restartAllPods);
  EXPECT_FALSE(after.outcomes.at("ml/train").degraded);
  EXPECT_EQ(after.outcomes.at("ml/train").state, WorkloadState::kAllocated);

  const AllocationPlan fresh = settle(cordoned, {workload("next", 4, 1, "t2")}, {});
  EXPECT_TRUE(of(fresh, "ml/next").empty()) << "a cordoned node is not free";
}

TEST(Allocator, MigrateAffectedMovesOnlyTheFailedGroup) {
  const std::vector<Workload> workloads = {
      workload("serve", 1, 2, "t1", FailureStrategy::kMigrateAffected)};
  const auto servers = cluster(2);
  const AllocationPlan running = settle(servers, workloads, {});
  ASSERT_EQ(running.allocations.size(), 2U);
  const std::string failedNode = running.allocations[1].nodes[0];
  const std::string keptNode = running.allocations[0].nodes[0];
  const AllocationPlan moved = settle(cluster(2, {failedNode}), workloads, running.allocations);
  const auto mine = of(moved, "ml/serve");
  ASSERT_EQ(mine.size(), 2U);
  EXPECT_EQ(mine[0].nodes[0], keptNode) << "the healthy allocation stays";
  EXPECT_NE(mine[1].nodes[0], failedNode);
  EXPECT_EQ(mine[1].ultraServerIndex, 1) << "the replacement takes the moved one's index";
  EXPECT_EQ(moved.outcomes.at("ml/serve").state, WorkloadState::kAllocated);

  const AllocationPlan firstPass =
      planAllocations(cluster(2, {failedNode}), workloads, running.allocations, "t9");
  EXPECT_EQ(firstPass.outcomes.at("ml/serve").restartPodsOn, std::vector<std::string>{failedNode});
  EXPECT_FALSE(firstPass.outcomes.at("ml/serve").restartAllPods);
}

TEST(Allocator, MigrateAffectedWithNowhereToGoKeepsTheRestAndWaits) {
  const std::vector<Workload> workloads = {
      workload("train", 4, 1, "t1", FailureStrategy::kMigrateAffected)};
  const AllocationPlan running = settle(cluster(1), workloads, {});
  const AllocationPlan plan = settle(cluster(1, {"n0-1"}), workloads, running.allocations);
  EXPECT_TRUE(plan.allocations.empty());
  EXPECT_EQ(plan.outcomes.at("ml/train").state, WorkloadState::kPending);
}

TEST(Allocator, DeletingHoldsUntilPodsAreGone) {
  std::vector<Workload> workloads = {workload("train", 4, 1, "t1")};
  const AllocationPlan running = settle(cluster(1), workloads, {});
  workloads[0].deleting = true;
  workloads[0].podsRemain = true;
  AllocationPlan plan = planAllocations(cluster(1), workloads, running.allocations, "t9");
  EXPECT_EQ(plan.allocations.size(), 1U);
  EXPECT_EQ(plan.outcomes.at("ml/train").state, WorkloadState::kDeallocating);
  EXPECT_TRUE(plan.outcomes.at("ml/train").restartAllPods);
  workloads[0].podsRemain = false;
  plan = planAllocations(cluster(1), workloads, running.allocations, "t9");
  EXPECT_TRUE(plan.allocations.empty());
}

TEST(Allocator, AnInvalidWorkloadHoldsNothing) {
  std::vector<Workload> workloads = {workload("train", 4, 1, "t1")};
  workloads[0].invalid = "spec.topologySize 3 is not an UltraServer configuration";
  const AllocationPlan plan = settle(cluster(1), workloads, {});
  EXPECT_TRUE(plan.allocations.empty());
  EXPECT_EQ(plan.outcomes.at("ml/train").state, WorkloadState::kFailed);
  EXPECT_EQ(plan.outcomes.at("ml/train").message, workloads[0].invalid);
}

TEST(Allocator, OldestFirstButASmallerOneMayFitBehindABigOne) {
  const auto servers = cluster(1, {"n0-3"});
  const std::vector<Workload> workloads = {workload("big", 4, 1, "t1"),
                                           workload("small", 2, 1, "t2")};
  const AllocationPlan plan = settle(servers, workloads, {});
  EXPECT_EQ(plan.outcomes.at("ml/big").state, WorkloadState::kPending);
  EXPECT_NE(plan.outcomes.at("ml/big").message.find("1 not Ready"), std::string::npos)
      << plan.outcomes.at("ml/big").message;
  EXPECT_EQ(plan.outcomes.at("ml/small").state, WorkloadState::kAllocated);
}

}  // namespace
}  // namespace torus::ultraserver
