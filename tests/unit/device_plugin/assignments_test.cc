#include "device-plugin/assignments.h"

#include <gtest/gtest.h>

#include "device-plugin/allocation.h"
#include "device-plugin/pod_resources_poller.h"

namespace torus::plugin {
namespace {

using namespace std::chrono_literals;
using topology::CoreSet;

CoreSet ids(const char* text) {
  return *CoreSet::parse(text);
}

TEST(Assignments, DevicesBlockTheirCoresAndCoresBlockTheirDevice) {
  const topology::Node node = *topology::catalogNode("trn2.48xlarge");  // 4 cores per device
  Assignments held;
  held.held[ResourceKind::kNeuron] = ids("1");
  held.held[ResourceKind::kNeuronCore] = ids("17");  // device 4
  EXPECT_EQ(blockedIds(ResourceKind::kNeuronCore, node, held).toRangeString(), "4-7");
  EXPECT_EQ(blockedIds(ResourceKind::kNeuron, node, held).toRangeString(), "4");
  EXPECT_EQ(blockedIds(ResourceKind::kNeuronDevice, node, held).toRangeString(), "1,4");
  EXPECT_EQ(coresInUse(node, held).toRangeString(), "4-7,17");
}

TEST(Assignments, KubeletRowsOfOurResourcesBecomeHoldersAndOthersAreLeftOut) {
  const topology::Node node = *topology::catalogNode("trn2.48xlarge");
  const std::vector<kubelet::ContainerDevices> rows = {
      {"ml", "train", "main", "aws.amazon.com/neuroncore", {"4", "5"}},
      {"ml", "serve", "main", "aws.amazon.com/neuron", {"3"}},
      {"ml", "serve", "side", "nvidia.com/gpu", {"GPU-1"}},
      // Numbered for another LNC: not ours to track, the rest of the answer still counts.
      {"ml", "old", "main", "aws.amazon.com/neuroncore", {"999"}},
  };
  const Assignments assignments = assignmentsFromRows(rows, node);
  EXPECT_EQ(assignments.held.at(ResourceKind::kNeuronCore).toRangeString(), "4-5");
  EXPECT_EQ(assignments.held.at(ResourceKind::kNeuron).toRangeString(), "3");
  ASSERT_EQ(assignments.holders.size(), 2U);
  EXPECT_EQ(assignments.holders[0].pod, "ml/train");
  EXPECT_EQ(assignments.holders[1].container, "main");
  EXPECT_EQ(assignments.holders[1].kind, ResourceKind::kNeuron);
}

TEST(Assignments, CoresTwoPodsHoldAreFoundWhicheverResourceTheyCameThrough) {
  const topology::Node node = *topology::catalogNode("trn2.48xlarge");  // 4 cores per device
  const std::vector<Holder> holders = {
      {"ml/a", "main", ResourceKind::kNeuronCore, ids("4-7")},
      {"ml/b", "main", ResourceKind::kNeuronCore, ids("6-9")},
      {"ml/c", "main", ResourceKind::kNeuron, ids("2")},  // cores 8-11
      {"ml/d", "main", ResourceKind::kNeuronCore, ids("20-23")},
  };
  const auto shared = sharedBetweenPods(node, ids("4-11"), holders);
  ASSERT_TRUE(shared.has_value());
  EXPECT_EQ(shared->cores.toRangeString(), "6-9");
  ASSERT_EQ(shared->holders.size(), 3U);
  EXPECT_EQ(describeHolders(shared->holders),
            "ml/a (aws.amazon.com/neuroncore 4-7), ml/b (aws.amazon.com/neuroncore 6-9), ml/c "
            "(aws.amazon.com/neuron 2)");
  // Only the cores asked about count: d's are its own, and a's alone are no conflict.
  EXPECT_FALSE(sharedBetweenPods(node, ids("20-23"), holders).has_value());
  EXPECT_FALSE(sharedBetweenPods(node, ids("4-5"), holders).has_value());
}

TEST(Assignments, ContainersOfOnePodSharingIdsAreNoSecondTenant) {
  // kubelet hands an init container's ids on to the pod's app container.
  const topology::Node node = *topology::catalogNode("trn2.48xlarge");
  const std::vector<Holder> holders = {
      {"ml/a", "init", ResourceKind::kNeuronCore, ids("0-3")},
      {"ml/a", "main", ResourceKind::kNeuronCore, ids("0-3")},
  };
  EXPECT_FALSE(sharedBetweenPods(node, ids("0-3"), holders).has_value());
}

TEST(AssignmentTracker, OwnAllocationsCountUntilKubeletListsThemOrTheyExpire) {
  AssignmentTracker tracker(10s);
  const auto t0 = AssignmentTracker::Clock::now();
  int notifications = 0;
  auto subscription = tracker.onChange([&] { ++notifications; });
  tracker.recordAllocate(ResourceKind::kNeuron, ids("2"), t0);
  EXPECT_EQ(tracker.current(t0).held[ResourceKind::kNeuron], ids("2"));
  EXPECT_EQ(notifications, 1);
  EXPECT_FALSE(tracker.kubeletListed()) << "only our own grants are known";
  // kubelet lists it: tracked through kubelet from now on; when kubelet drops it, it is free.
  Assignments listed;
  listed.held[ResourceKind::kNeuron] = ids("2");
  tracker.replaceFromKubelet(listed, t0 + 1s);
  EXPECT_TRUE(tracker.kubeletListed());
  EXPECT_EQ(notifications, 2) << "kubelet's first answer is news even when nothing changed";
  tracker.replaceFromKubelet(listed, t0 + 1500ms);
  EXPECT_EQ(notifications, 2);  // nothing changed
  tracker.replaceFromKubelet({}, t0 + 2s);
  EXPECT_TRUE(tracker.current(t0 + 2s).held.empty());
  EXPECT_EQ(notifications, 3);
  // Never listed: held for the grace period only.
  tracker.recordAllocate(ResourceKind::kNeuronCore, ids("0-3"), t0 + 3s);
  tracker.replaceFromKubelet({}, t0 + 5s);
  EXPECT_FALSE(tracker.current(t0 + 5s).held.empty());
  tracker.replaceFromKubelet({}, t0 + 14s);
  EXPECT_TRUE(tracker.current(t0 + 14s).held.empty());
}

// Regression: with pod-resources unreachable, every Allocate added an entry that only a kubelet
// answer could remove (about 80 B each, no plateau over 105,000 calls).
TEST(AssignmentTracker, OwnGrantsStayBoundedWhileKubeletIsAway) {
  AssignmentTracker tracker(10s);
  const auto t0 = AssignmentTracker::Clock::now();
  for (int i = 0; i < 100'000; ++i) {
    tracker.recordAllocate(ResourceKind::kNeuronCore, topology::CoreSet::range(i % 64, 1),
                           t0 + std::chrono::milliseconds(i));
  }
  EXPECT_EQ(tracker.pendingCount(), 64U) << "one entry per distinct grant";
  // An hour later, a single new grant sweeps the expired ones.
  tracker.recordAllocate(ResourceKind::kNeuron, ids("3"), t0 + 1h);
  EXPECT_EQ(tracker.pendingCount(), 1U);
  EXPECT_EQ(tracker.current(t0 + 1h).held[ResourceKind::kNeuron], ids("3"));
  // Thousands of distinct grants at once (no kubelet admits that many): the oldest go first.
  for (int first = 0; first < 128; ++first) {
    for (int second = first + 1; second < 128; ++second) {
      tracker.recordAllocate(ResourceKind::kNeuronCore,
                             topology::CoreSet::fromIds(std::vector<int>{first, second}), t0 + 1h);
    }
  }
  EXPECT_EQ(tracker.pendingCount(), 4096U);
}

TEST(Allocation, VisibleCoresAndDeviceNodes) {
  const topology::Node node = *topology::catalogNode("inf1.24xlarge");  // 4 cores per device
  auto allocation = allocateContainer(ResourceKind::kNeuronCore, node, "/dev", ids("51-52"), {});
  ASSERT_TRUE(allocation.ok());
  ASSERT_EQ(allocation->deviceNodes.size(), 2U);  // cores 51 and 52 live on two devices
  EXPECT_EQ(allocation->deviceNodes[0].containerPath, "/dev/neuron12");
  EXPECT_EQ(allocation->deviceNodes[1].containerPath, "/dev/neuron13");
  EXPECT_EQ(allocation->env.at("NEURON_RT_VISIBLE_CORES"), "51-52");
  EXPECT_EQ(topology::visibleCoresText(ids("0,2")), "0,2");
  EXPECT_EQ(topology::visibleCoresText(ids("7")), "7");
}

TEST(Allocation, UnhealthyAndBlockedIdsAreRefusedByName) {
  topology::Node node = *topology::catalogNode("trn1.32xlarge");
  node.devices[3].health =
      topology::DeviceHealth::unhealthy(topology::HealthDimension::kDeviceLost, "DeviceNodeMissing",
                                        "device node /dev/neuron3 is missing");
  auto unhealthy = allocateContainer(ResourceKind::kNeuron, node, "/dev", ids("3"), {});
  ASSERT_FALSE(unhealthy.ok());
  EXPECT_EQ(unhealthy.error().message,
            "aws.amazon.com/neuron: ids not available: 3 (neuron3 unhealthy: device node "
            "/dev/neuron3 is missing)");
  auto blocked = allocateContainer(ResourceKind::kNeuronCore, node, "/dev", ids("0"), ids("0-1"));
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.error().message.find("held through another resource"), std::string::npos);
  EXPECT_FALSE(allocateContainer(ResourceKind::kNeuronCore, node, "/dev", {}, {}).ok());
  EXPECT_FALSE(
      parseIds(ResourceKind::kNeuronCore, node, {"07"}).ok());  // what Allocate parses first
}

TEST(ResourceKind, ParsesListsAndRejectsUnknownNames) {
  EXPECT_EQ(parseResourceList("neuroncore, aws.amazon.com/neuron")->size(), 2U);
  EXPECT_FALSE(parseResourceList("neuroncore,gpu").ok());
  EXPECT_FALSE(parseResourceList("neuron,neuron").ok());
  EXPECT_FALSE(parseResourceList("").ok());
  EXPECT_EQ(socketName(ResourceKind::kNeuronDevice), "torus-neurondevice.sock");
}

}  // namespace
}  // namespace torus::plugin
