// One NeuronCore, one tenant. kubelet's device manager gives the ids of an allocation in flight
// to the next pod when a pod-resources List lands in between (kubernetes/kubernetes#137534); the
// agent must not set that off, must steer away from ids a live container or its own recent grant
// holds, and must refuse a container start whose ids another live pod holds.
#include <atomic>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/metrics/event_counters.h"
#include "tests/integration/device_plugin/device_plugin_fixture.h"
#include "tests/integration/device_plugin/kubelet_device_manager.h"

namespace torus::testing {
namespace {

std::string describe(const std::map<std::string, std::set<std::string>>& shared) {
  std::string text;
  for (const auto& [id, pods] : shared) {
    text += "id " + id + ":";
    for (const std::string& pod : pods)
      text += " " + pod;
    text += "; ";
  }
  return text;
}

// kubelet's own order, driven through the agent's sockets: pod b's allocation is in flight while
// pod y ends. A List then would make kubelet forget b's ids and give them to c as well.
TEST_F(DevicePluginTest, NoListLandsWhileKubeletHasAnAllocationInFlight) {
  start("trn2.48xlarge", std::nullopt, {plugin::ResourceKind::kNeuron});  // 16 devices
  ASSERT_TRUE(kubelet_->waitForDevices(
      kDevices, [](const auto& devices) { return devices.size() == 16; }, 5s));
  KubeletDeviceManager kubelet(*kubelet_, kDevices);
  ASSERT_TRUE(kubelet.admit("a", 8).ok());
  ASSERT_TRUE(kubelet.admit("y", 4).ok());
  bool listedInFlight = false;
  auto b = kubelet.admit("b", 4, [&] {
    kubelet.end("y");
    // kubelet is busy here for a moment (well within the 1 s after which the agent gives a
    // preferred allocation up); the agent polls every 100 ms.
    listedInFlight = kubelet_->waitForListsAfter(kubelet_->listsAnswered(), 500ms);
  });
  ASSERT_TRUE(b.ok()) << b.error().message;
  // c asks for what is free after a and b: y's four. kubelet refuses it unless it forgot b's.
  auto c = kubelet.admit("c", 8);
  EXPECT_FALSE(listedInFlight) << "the agent read pod-resources with b's allocation in flight";
  EXPECT_TRUE(kubelet.sharedIds().empty()) << describe(kubelet.sharedIds());
  EXPECT_FALSE(c.ok()) << "c was given b's ids";
  // The agent reads pod-resources again once b is recorded.
  const int lists = kubelet_->listsAnswered();
  EXPECT_TRUE(kubelet_->waitForListsAfter(lists, 2s));
}

// kubelet offers ids the agent's own grant still holds (its count went wrong, or the pod ended
// since the agent last read): another choice is made where there is one.
TEST_F(DevicePluginTest, PreferredAllocationSteersAwayFromIdsARecentGrantHolds) {
  start("trn2.48xlarge");
  v1beta1::AllocateResponse response;
  ASSERT_TRUE(allocate(kCores, {range(0, 4)}, &response).ok());
  EXPECT_EQ(preferred(kCores, 4, range(0, 8)), "4,5,6,7");
  // Only when nothing else fits are they offered back (kubelet's word is final; the start check
  // below catches a real second tenant).
  EXPECT_EQ(preferred(kCores, 4, range(0, 4)), "0,1,2,3");
  // Listed by kubelet as a live pod's: the same.
  kubelet_->setPodAssignments({{"ml", "a", kCores, range(8, 4)}});
  ASSERT_TRUE(kubelet_->waitForListsAfter(kubelet_->listsAnswered(), 2s));
  ASSERT_TRUE(kubelet_->waitForListsAfter(kubelet_->listsAnswered(), 2s));
  EXPECT_EQ(preferred(kCores, 4, range(8, 8)), "12,13,14,15");
}

grpc::Status preStart(FakeKubelet& kubelet, const std::string& resource,
                      const std::vector<std::string>& ids) {
  v1beta1::PreStartContainerRequest request;
  for (const std::string& id : ids)
    request.add_devices_ids(id);
  v1beta1::PreStartContainerResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  return kubelet.pluginClient(resource)->PreStartContainer(&context, request, &response);
}

TEST_F(DevicePluginTest, AContainerWhoseCoresAnotherLivePodHoldsIsNotStartedUntilThatPodEnds) {
  start("trn2.48xlarge");
  const metrics::Labels labels = {{"resource", kCores}};
  const double before =
      metrics::processCounters().value(metrics::names::kDoubleAllocationsTotal, labels);
  // kubelet gave cores 4-7 to two running pods; a and b have already run on them.
  kubelet_->setPodAssignments({{"ml", "a", kCores, range(4, 4)},
                               {"ml", "b", kCores, range(4, 4)},
                               {"ml", "other", kCores, range(8, 4)}});
  const std::uint64_t resetsBefore = resetsOf(1);
  const grpc::Status refused = preStart(*kubelet_, kCores, range(4, 4));
  ASSERT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(refused.error_message().find("ml/a (aws.amazon.com/neuroncore 4-7)"), std::string::npos)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find("ml/b (aws.amazon.com/neuroncore 4-7)"), std::string::npos)
      << refused.error_message();
  EXPECT_EQ(refused.error_message().find("ml/other"), std::string::npos);
  EXPECT_EQ(resetsOf(1), resetsBefore) << "the chip was reset under a tenant";
  // kubelet retries the start: refused again, counted once.
  EXPECT_EQ(preStart(*kubelet_, kCores, range(4, 4)).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(metrics::processCounters().value(metrics::names::kDoubleAllocationsTotal, labels),
            before + 1);
  // A container of its own cores starts.
  EXPECT_TRUE(preStart(*kubelet_, kCores, range(8, 4)).ok());
  // a ended and kubelet dropped it: b starts.
  kubelet_->setPodAssignments({{"ml", "b", kCores, range(4, 4)}});
  EXPECT_TRUE(preStart(*kubelet_, kCores, range(4, 4)).ok());
}

// The check cannot see: kubelet's pod-resources refuses the List. The start is held back
// (UNAVAILABLE: kubelet retries it), never let through unchecked, and nothing is reset; once the
// List answers again the container starts.
TEST_F(DevicePluginTest, AContainerStartIsHeldBackWhilePodResourcesCannotBeRead) {
  start("trn2.48xlarge");
  const std::uint64_t resetsBefore = resetsOf(1);
  kubelet_->setListRefused(true);
  const grpc::Status held = preStart(*kubelet_, kCores, range(4, 4));
  EXPECT_EQ(held.error_code(), grpc::StatusCode::UNAVAILABLE) << held.error_message();
  EXPECT_NE(held.error_message().find("cannot tell whether another running pod holds cores 4-7"),
            std::string::npos)
      << held.error_message();
  EXPECT_EQ(resetsOf(1), resetsBefore) << "a chip was reset without the check";
  kubelet_->setListRefused(false);
  EXPECT_TRUE(preStart(*kubelet_, kCores, range(4, 4)).ok());
}

// A force-deleted pod: kubelet stops listing it at once and may give its ids to the next pod
// while its containers run out their grace period. Neither that container's start nor the release
// reset touches the chip until the old pod's processes are gone.
TEST_F(DevicePluginTest, NothingStartsOnTheChipOfADeletedPodWhoseProcessesStillRun) {
  std::atomic<bool> oldRuns = true;
  podUid_ = [](const std::string& pod) -> std::optional<std::string> {
    if (pod == "ml/old") return "0b1d-old";
    if (pod == "ml/neighbour") return "0b1d-neighbour";
    return std::nullopt;
  };
  podStillRuns_ = [&](const std::string& uid) -> Result<bool> {
    return uid == "0b1d-old" && oldRuns.load();
  };
  start("trn2.48xlarge");
  kubelet_->setPodAssignments(
      {{"ml", "old", kCores, range(4, 4)}, {"ml", "neighbour", kCores, range(8, 4)}});
  ASSERT_TRUE(kubelet_->waitForListsAfter(kubelet_->listsAnswered(), 2s));
  const std::uint64_t resetsBefore = resetsOf(1);
  kubelet_->setPodAssignments({{"ml", "neighbour", kCores, range(8, 4)}});  // old: deleted
  ASSERT_TRUE(kubelet_->waitForListsAfter(kubelet_->listsAnswered(), 2s));
  const grpc::Status held = preStart(*kubelet_, kCores, range(4, 4));
  ASSERT_EQ(held.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << held.error_message();
  EXPECT_NE(held.error_message().find("were pod ml/old's (uid 0b1d-old)"), std::string::npos)
      << held.error_message();
  EXPECT_EQ(resetsOf(1), resetsBefore) << "chip 1 was reset under the deleted pod's container";
  // Another chip is not held back.
  EXPECT_TRUE(preStart(*kubelet_, kCores, range(12, 4)).ok());
  // Its processes gone, the container starts (and its chip is reset for it).
  oldRuns = false;
  const grpc::Status started = preStart(*kubelet_, kCores, range(4, 4));
  EXPECT_TRUE(started.ok()) << started.error_message();
  if (driverServesResets()) {
    EXPECT_GT(resetsOf(1), resetsBefore);
  }
}

TEST_F(DevicePluginTest, AWholeDeviceAndItsCoresHeldByTwoPodsIsADoubleAllocationToo) {
  start("trn2.48xlarge");
  kubelet_->setPodAssignments(
      {{"ml", "whole", kDevices, {"1"}}, {"ml", "cores", kCores, range(6, 2)}});
  const grpc::Status refused = preStart(*kubelet_, kDevices, {"1"});
  ASSERT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(refused.error_message().find("cores 6-7"), std::string::npos)
      << refused.error_message();
}

}  // namespace
}  // namespace torus::testing
