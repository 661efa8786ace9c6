// The concurrent pieces without gRPC in the way, hammered from several threads. These run under
// ThreadSanitizer in CI (scripts/test.sh --sanitize=thread -- -L concurrency); gRPC and abseil in
// Debian are not built with TSan, so tests that go through them would only report its internals.
#include <atomic>
#include <future>
#include <map>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/change_notifier.h"
#include "common/base/deadline_worker.h"
#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "device-plugin/assignments.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/health/node_monitor.h"
#include "node-runtime/simulator/sim_tree.h"
#include "scheduler-extender/kube/cluster_mirror.h"
#include "scheduler-extender/verbs/gang_verbs.h"

namespace torus {
namespace {

using namespace std::chrono_literals;

TEST(ChangeNotifierConcurrency, SubscribersComeAndGoWhileNotifying) {
  ChangeNotifier notifier;
  std::atomic<int> calls{0};
  std::atomic<bool> stop{false};
  std::thread notifying([&] {
    while (!stop)
      notifier.notify();
  });
  for (int round = 0; round < 200; ++round) {
    auto counter = std::make_unique<int>(0);
    int* target = counter.get();
    {
      auto subscription = notifier.subscribe([&, target] {
        ++*target;  // touches memory the subscriber frees right after unsubscribing
        ++calls;
      });
      // Let the notifying thread reach this subscriber (bounded), so the unsubscribe below
      // races a callback in flight rather than an idle notifier.
      const int seen = calls.load();
      const auto until = std::chrono::steady_clock::now() + 50ms;
      while (calls.load() == seen && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
    }
    counter.reset();
  }
  stop = true;
  notifying.join();
  // The race is only exercised if callbacks ran while subscriptions came and went (TSan and
  // ASan report the use after free it guards against).
  EXPECT_GT(calls.load(), 0);
  // Once the last subscription is gone, a notification reaches nobody.
  const int before = calls.load();
  notifier.notify();
  EXPECT_EQ(calls.load(), before);
}

TEST(DeadlineWorkerConcurrency, AnOverrunningTaskIsLeftAloneAndRefusesTheNext) {
  using namespace std::chrono_literals;
  auto results = std::make_shared<std::atomic<int>>(0);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  {
    DeadlineWorker worker;
    EXPECT_TRUE(worker.run([results] { results->fetch_add(1); }, 5s));
    EXPECT_EQ(results->load(), 1) << "a task done in time has its effects visible";
    EXPECT_FALSE(worker.stuckSince().has_value());
    // A task that blocks (a hung read) overruns its deadline and keeps the worker...
    EXPECT_FALSE(worker.run(
        [results, released] {
          released.wait();
          results->fetch_add(10);
        },
        50ms));
    ASSERT_TRUE(worker.stuckSince().has_value());
    // ...so the next is refused at once rather than queued behind it.
    const auto asked = std::chrono::steady_clock::now();
    EXPECT_FALSE(worker.run([results] { results->fetch_add(100); }, 5s));
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s);
    // Destroying the worker does not wait for the stuck task.
  }
  release.set_value();  // the abandoned task finishes on its own, after its owner is gone
  for (int i = 0; i < 200 && results->load() != 11; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(results->load(), 11) << "the refused task never ran";
}

TEST(AssignmentTrackerConcurrency, KubeletAnswersAndAllocationsInterleave) {
  plugin::AssignmentTracker tracker(50ms);
  std::atomic<int> notifications{0};
  auto subscription = tracker.onChange([&] { ++notifications; });
  std::vector<std::jthread> threads;
  threads.emplace_back([&] {
    for (int i = 0; i < 2000; ++i) {
      plugin::Assignments listed;
      listed.held[plugin::ResourceKind::kNeuron] = topology::CoreSet::range(i % 16, 1);
      tracker.replaceFromKubelet(listed);
    }
  });
  threads.emplace_back([&] {
    for (int i = 0; i < 2000; ++i) {
      tracker.recordAllocate(plugin::ResourceKind::kNeuronCore,
                             topology::CoreSet::range(i % 64, 1));
    }
  });
  threads.emplace_back([&] {
    for (int i = 0; i < 2000; ++i)
      (void)tracker.current();
  });
  threads.clear();
  EXPECT_GT(notifications.load(), 0);
}

// The node and pod informers list on their own threads, in either order. A pod listed while its
// node is being added must end up held on that node, never parked for a node that already came.
TEST(ClusterMirrorConcurrency, APodListedAsItsNodeArrivesKeepsItsCores) {
  using nlohmann::json;
  const auto node = std::make_shared<const json>(json{
      {"metadata",
       {{"name", "trn-a"}, {"labels", {{"node.kubernetes.io/instance-type", "trn2.48xlarge"}}}}}});
  const json limits = {{"aws.amazon.com/neuroncore", "4"}};
  const auto pod = std::make_shared<const json>(
      json{{"metadata",
            {{"name", "p"},
             {"namespace", "ml"},
             {"uid", "u1"},
             {"annotations", {{"AWS_NEURON_IDS", "4-7"}}}}},
           {"spec",
            {{"nodeName", "trn-a"},
             {"containers", json::array({{{"name", "c"}, {"resources", {{"limits", limits}}}}})}}},
           {"status", {{"phase", "Running"}}}});
  int lost = 0;
  for (int round = 0; round < 1000; ++round) {
    extender::ClusterState state;
    extender::ClusterMirror mirror(state);
    std::atomic<int> ready{0};
    const auto together = [&] {
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
    };
    {
      std::jthread nodes([&] {
        together();
        mirror.applyNodeList({node});
      });
      std::jthread pods([&] {
        together();
        // Sweep the pod's start across the node's insertion, a quarter microsecond per round.
        const auto start = std::chrono::steady_clock::now() + round % 400 * 250ns;
        while (std::chrono::steady_clock::now() < start) {
        }
        mirror.applyPodList({pod});
      });
    }
    if (!state.allocationOf("u1")) ++lost;
  }
  EXPECT_EQ(lost, 0) << "rounds in which the pod's cores were not held";
}

// Two gangs of three whole-node pods race for four nodes (kube-scheduler's filters of different
// pods can overlap, and so can two schedulers): each round one gang gets three nodes and the other
// none — never a node given twice, never part of a gang held — while members come and go.
TEST(GangConcurrency, TwoGangsRacingForTheSameNodesNeverShareOrSplit) {
  using extender::PodDemand;
  constexpr auto kDevice = topology::AllocationUnit::kDevice;
  const auto member = [&](const std::string& gang, int index) {
    PodDemand pod;
    pod.name = gang + "-" + std::to_string(index);
    pod.namespace_ = "ml";
    pod.uid = pod.name;
    pod.unit = kDevice;
    pod.count = 16;
    pod.resourceName = "aws.amazon.com/neuron";
    pod.gang = extender::GangRef{gang, 3};
    return pod;
  };
  for (int round = 0; round < 200; ++round) {
    extender::ClusterState state;
    extender::NodeDomainIndex domains;
    extender::GangMembers members;
    std::vector<std::string> nodes;
    for (int i = 0; i < 4; ++i) {
      nodes.push_back("n" + std::to_string(i));
      ASSERT_TRUE(state.upsertNode(nodes.back(), "trn2u.48xlarge").ok());
      extender::NodeDomains where;
      where.levels[0] = "us-0";
      domains.set(nodes.back(), where);
    }
    for (const char* gang : {"a", "b"}) {
      for (int i = 0; i < 3; ++i)
        members.apply(member(gang, i), "", false);
    }
    const extender::Gangs gangs{members, domains, nullptr};
    {
      std::vector<std::jthread> filters;
      for (const char* gang : {"a", "b"}) {
        for (int i = 0; i < 3; ++i) {
          filters.emplace_back([&, gang, i] {
            (void)extender::filterGangMember(state, gangs, member(gang, i), nodes);
          });
        }
      }
      // A member of each gang leaves and comes back meanwhile.
      filters.emplace_back([&] {
        members.forget("a-2");
        members.apply(member("a", 2), "", false);
        members.forget("b-0");
        members.apply(member("b", 0), "", false);
      });
    }
    std::map<std::string, int> heldByGang;
    std::map<std::string, int> podsOnNode;
    for (const extender::Allocation& allocation : state.allocations()) {
      ++heldByGang[allocation.podKey.substr(3, 1)];
      ++podsOnNode[allocation.node];
    }
    for (const auto& [gang, held] : heldByGang)
      EXPECT_EQ(held, 3) << "round " << round << ": gang " << gang << " holds part of its pods";
    EXPECT_LE(heldByGang.size(), 1U) << "round " << round << ": both gangs hold nodes";
    for (const auto& [node, pods] : podsOnNode)
      EXPECT_EQ(pods, 1) << "round " << round << ": " << node << " given twice";
  }
}

TEST(NodeMonitorConcurrency, ReadersSeeWholeSnapshotsWhileHealthFlips) {
  auto dir = TempDir::create("monitor-concurrency");
  ASSERT_TRUE(dir.ok());
  simulator::SimulationSpec spec;
  spec.instanceType = "inf2.48xlarge";
  auto tree = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(tree.ok());
  auto found = discovery::discoverNode(tree->roots(), {});
  ASSERT_TRUE(found.ok());
  health::NodeMonitor monitor(tree->roots(), {}, *found, 5ms);
  std::atomic<int> changes{0};
  auto subscription = monitor.onChange([&] { ++changes; });
  const auto ecc = tree->roots().sys / "devices" / "virtual" / "neuron_device" / "neuron3" /
                   "stats" / "hardware" / "mem_ecc_uncorrected";
  std::jthread flipping([&] {
    for (int i = 0; i < 40; ++i) {
      (void)writeFile(ecc, i % 2 == 0 ? "1\n" : "0\n");
      std::this_thread::sleep_for(10ms);
    }
  });
  std::jthread refreshing([&] {
    for (int i = 0; i < 20; ++i)
      monitor.refresh();
  });
  for (int i = 0; i < 2000; ++i) {
    const topology::Node node = monitor.node();
    ASSERT_EQ(node.deviceCount(), 12);
  }
  flipping.join();
  refreshing.join();
  EXPECT_GT(changes.load(), 0);
}

}  // namespace
}  // namespace torus
