// A claim is not given back while a pod it was prepared for still has processes on the node: a
// force-deleted pod's containers run on for their grace period after kubelet forgot the pod, and
// kubelet's DRA reconcile may unprepare its claim inside that window. Its chips stay held (no
// reset, no other claim) until the processes are gone; the record survives a restart.
#include "dra-driver/claim_consumers.h"

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/unit/dra/claim_preparer_fixture.h"

namespace torus::dra {
namespace {

using nlohmann::json;

json reservedFor(const std::vector<std::string>& podUids) {
  json consumers = json::array();
  for (const std::string& uid : podUids) {
    consumers.push_back(
        {{"resource", "pods"}, {"name", "pod-" + uid}, {"uid", uid}, {"apiGroup", ""}});
  }
  return consumers;
}

class ClaimConsumersTest : public testing::ClaimPreparerTest {
 protected:
  void SetUp() override {
    ClaimPreparerTest::SetUp();
    options_.podStillRuns = [this](const std::string& uid) -> Result<bool> {
      if (scanFails_) return makeError(ErrorCode::kPermissionDenied, "/proc: denied");
      return running_.count(uid) != 0;
    };
  }
  ClaimRef addFor(const std::string& name, const std::string& device,
                  const std::vector<std::string>& podUids) {
    const ClaimRef ref = add(name, {device});
    objects_["ns/" + name]["status"]["reservedFor"] = reservedFor(podUids);
    return ref;
  }

  std::set<std::string> running_;
  bool scanFails_ = false;
};

TEST(ClaimConsumers, ReservedPodUidsAreThePodsInReservedFor) {
  json claim = {{"status", {{"reservedFor", reservedFor({"a", "b"})}}}};
  claim["status"]["reservedFor"].push_back(
      {{"resource", "workloads"}, {"apiGroup", "example.com"}, {"name", "w"}, {"uid", "c"}});
  EXPECT_EQ(reservedPodUids(claim), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(reservedPodUids(json::object()).empty());
  std::vector<std::string> known = {"a"};
  EXPECT_TRUE(addConsumers(known, {"a", "b"}));
  EXPECT_FALSE(addConsumers(known, {"b"}));
  EXPECT_EQ(known, (std::vector<std::string>{"a", "b"}));
}

TEST_F(ClaimConsumersTest, AClaimIsNotGivenBackWhileItsPodStillRunsHere) {
  auto preparer = makePreparer();
  const ClaimRef old = addFor("old", "neurondevice3", {"pod-old"});
  ASSERT_TRUE(prepare(*preparer, old).ok());
  running_ = {"pod-old"};  // force-deleted: kubelet forgot it, its containers still stop

  const Result<void> early = preparer->unprepare(old);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(early.error().message.find("pod pod-old"), std::string::npos) << early.error().message;
  EXPECT_TRUE(preparer->prepared().contains(old.uid));
  EXPECT_TRUE(preparer->pendingResets().empty());
  EXPECT_TRUE(node_.resets().empty());
  // The next pod's claim for the chip waits for it.
  const ClaimRef next = addFor("next", "neurondevice3", {"pod-next"});
  EXPECT_FALSE(prepare(*preparer, next).ok());

  running_.clear();  // kubelet has stopped them; it retries the unprepare
  ASSERT_TRUE(preparer->unprepare(old).ok());
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  EXPECT_EQ(node_.resets(), (std::vector<std::string>{"3"}));
  EXPECT_TRUE(prepare(*preparer, next).ok());
}

// A shared claim is prepared once and unprepared after its last pod: every pod that used it
// counts, and so does the record of them after a restart.
TEST_F(ClaimConsumersTest, EveryPodOfASharedClaimCountsAcrossARestart) {
  const ClaimRef shared = addFor("shared", "neurondevice7", {"pod-a"});
  {
    auto preparer = makePreparer();
    ASSERT_TRUE(prepare(*preparer, shared).ok());
    objects_["ns/shared"]["status"]["reservedFor"] = reservedFor({"pod-a", "pod-b"});
    ASSERT_TRUE(prepare(*preparer, shared).ok());  // kubelet prepares it for pod-b too
  }
  auto restarted = makePreparer();
  running_ = {"pod-b"};
  const Result<void> held = restarted->unprepare(shared);
  ASSERT_FALSE(held.ok());
  EXPECT_NE(held.error().message.find("pod pod-b"), std::string::npos) << held.error().message;
  running_.clear();
  EXPECT_TRUE(restarted->unprepare(shared).ok());
  EXPECT_FALSE(restarted->prepared().contains(shared.uid));
}

// Where the agent cannot list /proc (hostPID off; the grant probe says so) nothing can be told,
// and a claim is not held for ever: it is given back as kubelet asks.
TEST_F(ClaimConsumersTest, ANodeThatCannotBeAskedDoesNotHoldTheClaim) {
  auto preparer = makePreparer();
  const ClaimRef claim = addFor("c", "neurondevice1", {"pod-c"});
  ASSERT_TRUE(prepare(*preparer, claim).ok());
  running_ = {"pod-c"};
  scanFails_ = true;
  EXPECT_TRUE(preparer->unprepare(claim).ok());
  EXPECT_FALSE(preparer->prepared().contains(claim.uid));
}

}  // namespace
}  // namespace torus::dra
