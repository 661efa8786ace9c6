// A gang runs as one UltraServer job — and its pods are told so at bind — only when each of its
// Neuron pods holds a whole node and together they hold 4 nodes of one UltraServer, the 2 of a
// pair, or 1 node of one.
#include "scheduler-extender/gang/ultraserver_job.h"

#include <gtest/gtest.h>

#include "tests/unit/extender/test_pods.h"

namespace torus::extender {
namespace {

constexpr auto kDevice = topology::AllocationUnit::kDevice;

// UltraServer us-a (a0..a3; pairs a0+a1 and a2+a3), UltraServer us-b (b0, b1; one pair).
class UltraServerJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string name : {"a0", "a1", "a2", "a3", "b0", "b1"}) {
      ASSERT_TRUE(state_.upsertNode(name, "trn2u.48xlarge").ok());
      NodeDomains domains;
      domains.levels[0] = "us-" + name.substr(0, 1);
      domains.ultraServerPair = name.substr(0, 1) + (name[1] < '2' ? "-p0" : "-p1");
      domains_.set(name, domains);
    }
  }

  // A member asking `devices`, reserved on `node` ("": not placed yet).
  void add(const std::string& uid, const std::string& node, int devices = 16) {
    PodDemand pod = testing::testPod(uid, kDevice, devices, 0, "ml");
    pod.gang = GangRef{"train", 4};
    if (!node.empty()) {
      ASSERT_TRUE(state_.reserve(node, pod).ok()) << uid << "@" << node;
    }
    members_.push_back({pod, ""});
  }

  std::optional<int> nodes() const { return ultraServerJobNodes(state_, domains_, members_); }

  // Another gang: every member's devices given back.
  void startOver() {
    for (const GangMember& member : members_)
      state_.release(member.demand.uid);
    members_.clear();
  }

  ClusterState state_;
  NodeDomainIndex domains_;
  std::vector<GangMember> members_;
};

TEST_F(UltraServerJobTest, FourWholeNodesOfOneUltraServer) {
  for (const std::string node : {"a0", "a1", "a2", "a3"})
    add("w-" + node, node);
  EXPECT_EQ(nodes(), 4);
}

TEST_F(UltraServerJobTest, TwoWholeNodesOfOnePairAndOneWholeNode) {
  add("w0", "a2");
  add("w1", "a3");
  EXPECT_EQ(nodes(), 2);
  members_.pop_back();
  EXPECT_EQ(nodes(), 1);
}

TEST_F(UltraServerJobTest, NoJobWhenTheNodesAreNotOneUnitOfTheUltraServer) {
  add("w0", "a1");
  add("w1", "a2");
  EXPECT_EQ(nodes(), std::nullopt) << "two nodes of different pairs";
  startOver();
  add("x0", "a0");
  add("x1", "b0");
  EXPECT_EQ(nodes(), std::nullopt) << "two UltraServers";
  startOver();
  add("y0", "a0");
  add("y1", "a1");
  add("y2", "a2");
  EXPECT_EQ(nodes(), std::nullopt) << "three nodes";
}

TEST_F(UltraServerJobTest, NoJobWhenAPodHoldsPartOfANodeOrNothingYet) {
  add("half0", "b0", 8);
  add("half1", "b0", 8);
  EXPECT_EQ(nodes(), std::nullopt) << "two pods share a node";
  startOver();
  add("w0", "b1");
  add("w1", "");
  EXPECT_EQ(nodes(), std::nullopt) << "a member not placed";
}

}  // namespace
}  // namespace torus::extender
