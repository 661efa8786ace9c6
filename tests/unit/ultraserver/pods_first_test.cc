// Pods first: nodes a workload gives up because its pods are evicted (RestartAll, InvalidSpec)
// go to the next workload only once those pods are gone. Each pass here is the operator's: plan,
// list the pods on the nodes the plan takes from a workload, and plan again holding them while
// the pods are still there (app/reconcile_pass.cc).
#include "ultraserver-operator/model/pods_first.h"

#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/contracts/neuron_names.h"
#include "tests/unit/ultraserver/operator_fixtures.h"

namespace torus::ultraserver {
namespace {

using nlohmann::json;

constexpr const char* kNow = "2026-11-27T10:00:00Z";

// `count` UltraServers of four trn2u nodes: us<k> holds nodes n<k>-0 .. n<k>-3; those in
// `notReady` have not been Ready since an hour ago.
std::vector<UltraServer> cluster(int count, const std::set<std::string>& notReady = {}) {
  std::vector<MemberNode> members;
  for (int k = 0; k < count; ++k) {
    for (int id = 0; id < 4; ++id) {
      const std::string name = "n" + std::to_string(k) + "-" + std::to_string(id);
      const json node = nodeObject(name, "AB" + std::to_string(k), id, !notReady.count(name));
      members.push_back(*memberOf(node));
    }
  }
  return groupUltraServers(members);
}

// A's whole UltraServer us<k>, recorded and confirmed.
Allocation wholeServer(const std::string& ref, int k, int index) {
  Allocation allocation;
  allocation.workloadRef = ref;
  allocation.ultraServer = ultraServerName("AB" + std::to_string(k));
  allocation.ultraServerIndex = index;
  for (int id = 0; id < 4; ++id)
    allocation.nodes.push_back("n" + std::to_string(k) + "-" + std::to_string(id));
  allocation.phase = contracts::kAllocationBound;
  allocation.allocatedAt = "2026-11-27T08:00:00Z";
  return allocation;
}

json pod(const std::string& name, const std::string& node, const std::string& phase = "Running",
         bool terminating = true) {
  json object = {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}}},
                 {"spec", {{"nodeName", node}}},
                 {"status", {{"phase", phase}}}};
  if (terminating) object["metadata"]["deletionTimestamp"] = "2026-11-27T09:59:50Z";
  return object;
}

// One operator pass: the pods each workload still has, as the API lists them, by workload ref.
AllocationPlan pass(const std::vector<UltraServer>& servers, std::vector<Workload> workloads,
                    const std::vector<Allocation>& current,
                    const std::map<std::string, std::vector<json>>& pods) {
  AllocationPlan plan = planAllocations(servers, workloads, current, kNow);
  bool again = false;
  for (const auto& [ref, nodes] : nodesGivenUp(workloads, current, plan)) {
    const auto listed = pods.find(ref);
    if (listed == pods.end() || !podsStillOn(listed->second, nodes, servers)) continue;
    for (Workload& w : workloads) {
      if (w.ref() == ref) w.podsRemain = true;
    }
    again = true;
  }
  return again ? planAllocations(servers, workloads, current, kNow) : plan;
}

std::vector<Allocation> of(const AllocationPlan& plan, const std::string& ref) {
  std::vector<Allocation> mine;
  for (const Allocation& allocation : plan.allocations) {
    if (allocation.workloadRef == ref) mine.push_back(allocation);
  }
  return mine;
}

struct EvictedCase {
  const char* description;
  int servers;
  std::set<std::string> notReady;
  Workload first;  // holds every UltraServer, and must give them up
  bool invalid;
};

TEST(UltraServerPodsFirst, EvictedPodsKeepTheirNodesFromTheNextWorkloadUntilGone) {
  const std::vector<EvictedCase> cases = {
      {"RestartAll: a node failed, every allocation released",
       2,
       {"n1-3"},
       workload("a", 4, 2, "2026-11-27T08:00:00Z", FailureStrategy::kRestartAll),
       false},
      {"InvalidSpec: the workload is Failed, its allocation released",
       1,
       {},
       workload("a", 4, 1, "2026-11-27T08:00:00Z"),
       true},
  };
  for (const EvictedCase& c : cases) {
    SCOPED_TRACE(c.description);
    const std::vector<UltraServer> servers = cluster(c.servers, c.notReady);
    Workload first = c.first;
    if (c.invalid) first.invalid = "spec.topologySize: expected 1, 2 or 4, got 3";
    const Workload second = workload("b", 4, 1, "2026-11-27T09:30:00Z");
    std::vector<Allocation> current;
    for (int k = 0; k < c.servers; ++k)
      current.push_back(wholeServer("ml/a", k, k));

    // Pass 1: a's pods on us0 are evicted, not gone; us0 stays a's, Pending, and b waits.
    const AllocationPlan evicting =
        pass(servers, {first, second}, current, {{"ml/a", {pod("a-0", "n0-0")}}});
    const WorkloadOutcome& a = evicting.outcomes.at("ml/a");
    EXPECT_TRUE(a.restartAllPods) << "its pods are still evicted";
    EXPECT_NE(a.message.find("pods terminating"), std::string::npos) << a.message;
    if (!c.invalid) {
      EXPECT_EQ(a.reason, "PodsTerminating");
    }
    EXPECT_EQ(of(evicting, "ml/a").size(), current.size()) << "recorded as released";
    for (const Allocation& allocation : of(evicting, "ml/a"))
      EXPECT_EQ(allocation.phase, contracts::kAllocationPending) << allocation.ultraServer;
    EXPECT_TRUE(of(evicting, "ml/b").empty()) << "handed on while a's pods still run there";
    EXPECT_EQ(evicting.outcomes.at("ml/b").state, WorkloadState::kPending);

    // Pass 2: the pods are gone (one left as Succeeded): b gets us0.
    const AllocationPlan gone = pass(servers, {first, second}, evicting.allocations,
                                     {{"ml/a", {pod("a-1", "n0-1", "Succeeded", false)}}});
    EXPECT_TRUE(of(gone, "ml/a").empty());
    const std::vector<Allocation> handedOn = of(gone, "ml/b");
    EXPECT_EQ(handedOn.size(), 1u);
    if (!handedOn.empty()) {
      EXPECT_EQ(handedOn[0].ultraServer, ultraServerName("AB0"));
    }
  }
}

TEST(UltraServerPodsFirst, APodOnANodeThatIsDownDoesNotHoldTheRest) {
  // RestartAll moves off a dead node: its pod there ends only when the node returns, and that
  // node goes to nobody meanwhile, so it must not keep us0 from b.
  const std::vector<UltraServer> servers = cluster(2, {"n1-3"});
  const Workload a = workload("a", 4, 2, "2026-11-27T08:00:00Z", FailureStrategy::kRestartAll);
  const Workload b = workload("b", 4, 1, "2026-11-27T09:30:00Z");
  const AllocationPlan plan =
      pass(servers, {a, b}, {wholeServer("ml/a", 0, 0), wholeServer("ml/a", 1, 1)},
           {{"ml/a", {pod("a-3", "n1-3")}}});
  EXPECT_TRUE(of(plan, "ml/a").empty());
  ASSERT_EQ(of(plan, "ml/b").size(), 1u);
  EXPECT_EQ(of(plan, "ml/b")[0].ultraServer, ultraServerName("AB0"));
}

TEST(UltraServerPodsFirst, NodesGivenUpAreThoseRecordedAndNoLongerHeld) {
  const std::vector<UltraServer> servers = cluster(2, {"n1-3"});
  const Workload a = workload("a", 4, 2, "2026-11-27T08:00:00Z", FailureStrategy::kRestartAll);
  Workload gone = workload("c", 4, 1, "2026-11-27T07:00:00Z");
  gone.deleting = true;  // its finalizer holds its nodes: not given up here
  const std::vector<Allocation> current = {wholeServer("ml/a", 0, 0), wholeServer("ml/a", 1, 1)};
  const AllocationPlan plan = planAllocations(servers, {a, gone}, current, kNow);
  const auto givenUp = nodesGivenUp({a, gone}, current, plan);
  ASSERT_EQ(givenUp.size(), 1u);
  EXPECT_EQ(givenUp.at("ml/a").size(), 8u);
  EXPECT_FALSE(podsStillOn({}, givenUp.at("ml/a"), servers)) << "no pod listed";
  EXPECT_FALSE(podsStillOn({pod("x", "n0-0", "Failed")}, givenUp.at("ml/a"), servers));
  EXPECT_FALSE(podsStillOn({pod("x", "elsewhere")}, givenUp.at("ml/a"), servers));
  EXPECT_TRUE(podsStillOn({pod("x", "n0-2", "Running", false)}, givenUp.at("ml/a"), servers));
}

}  // namespace
}  // namespace torus::ultraserver
