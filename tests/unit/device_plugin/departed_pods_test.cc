#include "device-plugin/departed_pods.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

namespace torus::plugin {
namespace {

using topology::CoreSet;

CoreSet ids(const char* text) {
  return *CoreSet::parse(text);
}

// The pod watch's UIDs and the node's processes, as the agent would see them.
struct FakeNode {
  std::map<std::string, std::string> uids;  // namespace/name -> UID
  std::set<std::string> running;            // UIDs with processes
  bool procReadable = true;
  int asked = 0;

  DepartedPods departed() {
    return DepartedPods(
        [this](const std::string& pod) -> std::optional<std::string> {
          const auto found = uids.find(pod);
          if (found == uids.end()) return std::nullopt;
          return found->second;
        },
        [this](const std::string& uid) -> Result<bool> {
          ++asked;
          if (!procReadable) return makeError(ErrorCode::kUnavailable, "cannot list /proc");
          return running.count(uid) != 0;
        });
  }
};

class DepartedPodsTest : public ::testing::Test {
 protected:
  const topology::Node node_ = *topology::catalogNode("trn2.48xlarge");  // 4 cores per chip
  FakeNode fake_;
};

TEST_F(DepartedPodsTest, AForceDeletedPodStillRunningHoldsItsChipsBack) {
  fake_.uids = {{"ml/old", "u-old"}, {"ml/other", "u-other"}};
  fake_.running = {"u-old", "u-other"};
  DepartedPods departed = fake_.departed();
  departed.listed(node_, {{"ml/old", "main", ResourceKind::kNeuronCore, ids("4-7")},
                          {"ml/other", "main", ResourceKind::kNeuron, ids("5")}});
  EXPECT_TRUE(departed.checkNoneRunsOn(node_, ids("4-7")).ok()) << "nobody has departed yet";
  departed.listed(node_, {{"ml/other", "main", ResourceKind::kNeuron, ids("5")}});
  // Core 6 is on chip 1, the old pod's: held back, naming it.
  auto held = departed.checkNoneRunsOn(node_, ids("6"));
  ASSERT_FALSE(held.ok());
  EXPECT_EQ(held.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(held.error().message.find("cores 4-7 were pod ml/old's (uid u-old)"), std::string::npos)
      << held.error().message;
  // Chip 2 is free of it, and its processes are not even looked for.
  const int asked = fake_.asked;
  EXPECT_TRUE(departed.checkNoneRunsOn(node_, ids("8-11")).ok());
  EXPECT_EQ(fake_.asked, asked);
  // Gone: the start goes ahead and the pod is forgotten.
  fake_.running.erase("u-old");
  EXPECT_TRUE(departed.checkNoneRunsOn(node_, ids("4-7")).ok());
  EXPECT_EQ(departed.size(), 0U);
}

TEST_F(DepartedPodsTest, ThePodMadeAgainUnderItsNameHasDepartedToo) {
  fake_.uids = {{"ml/train-0", "u-1"}};
  fake_.running = {"u-1"};
  DepartedPods departed = fake_.departed();
  departed.listed(node_, {{"ml/train-0", "main", ResourceKind::kNeuronCore, ids("0-3")}});
  // A StatefulSet's pod force-deleted and made again: same name, same ids, another UID.
  fake_.uids["ml/train-0"] = "u-2";
  departed.listed(node_, {{"ml/train-0", "main", ResourceKind::kNeuronCore, ids("0-3")}});
  auto held = departed.checkNoneRunsOn(node_, ids("0-3"));
  ASSERT_FALSE(held.ok());
  EXPECT_NE(held.error().message.find("(uid u-1)"), std::string::npos) << held.error().message;
}

// The poll's List and the fresh List before a start arrive in either order: a pod an older List
// left out is not departed once a newer one shows it, so a starting pod never waits on itself.
TEST_F(DepartedPodsTest, APodAnOlderListLeftOutIsNotDepartedOnceListedAgain) {
  fake_.uids = {{"ml/new", "u-new"}};
  fake_.running = {"u-new"};
  DepartedPods departed = fake_.departed();
  departed.listed(node_, {{"ml/new", "main", ResourceKind::kNeuronCore, ids("20-23")}});  // fresh
  departed.listed(node_, {});  // the poll's List, sent before the pod was admitted
  EXPECT_FALSE(departed.checkNoneRunsOn(node_, ids("20-23")).ok());
  departed.listed(node_, {{"ml/new", "main", ResourceKind::kNeuronCore, ids("20-23")}});
  EXPECT_TRUE(departed.checkNoneRunsOn(node_, ids("20-23")).ok());
  EXPECT_EQ(departed.size(), 0U);
}

TEST_F(DepartedPodsTest, WhenProcessesCannotBeReadTheStartWaitsAndAnUnknownUidHoldsNothing) {
  fake_.uids = {{"ml/seen", "u-seen"}};
  fake_.procReadable = false;
  DepartedPods departed = fake_.departed();
  departed.listed(node_, {{"ml/seen", "main", ResourceKind::kNeuronCore, ids("0-3")},
                          {"ml/unseen", "main", ResourceKind::kNeuronCore, ids("8-11")}});
  departed.listed(node_, {});
  auto unknown = departed.checkNoneRunsOn(node_, ids("0-3"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kUnavailable);
  // The pod watch never had it: nothing to look for, so nothing is held back.
  EXPECT_TRUE(departed.checkNoneRunsOn(node_, ids("8-11")).ok());
}

TEST_F(DepartedPodsTest, AUidLearnedAfterTheFirstListIsKept) {
  DepartedPods departed = fake_.departed();
  departed.listed(node_, {{"ml/late", "main", ResourceKind::kNeuronCore, ids("0-3")}});
  fake_.uids = {{"ml/late", "u-late"}};
  fake_.running = {"u-late"};
  departed.listed(node_, {{"ml/late", "main", ResourceKind::kNeuronCore, ids("0-3")}});
  fake_.uids.clear();  // the watch has seen it deleted
  departed.listed(node_, {});
  EXPECT_FALSE(departed.checkNoneRunsOn(node_, ids("0-3")).ok());
}

}  // namespace
}  // namespace torus::plugin
