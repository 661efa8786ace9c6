#include "common/kubelet/allocation_window.h"

#include <future>
#include <thread>

#include <gtest/gtest.h>

namespace torus::kubelet {
namespace {

using namespace std::chrono_literals;
using Clock = AllocationWindow::Clock;

TEST(AllocationWindow, AListIsSafeOnlyOnceEveryAllocationReturnedAndTheMarginPassed) {
  AllocationWindow window({.margin = 100ms, .abandon = 2000ms});
  EXPECT_FALSE(window.unsafeUntil().has_value()) << "nothing in flight yet";
  window.opened("aws.amazon.com/neuroncore");
  const auto opened = Clock::now();
  ASSERT_TRUE(window.unsafeUntil(opened).has_value());
  // Another resource's allocation returning does not make the first one's window safe.
  window.opened("aws.amazon.com/neuron");
  window.closed("aws.amazon.com/neuron");
  EXPECT_GE(*window.unsafeUntil(), opened + 1900ms) << "the core allocation is still in flight";
  window.closed("aws.amazon.com/neuroncore");
  const auto closed = Clock::now();
  const auto until = window.unsafeUntil(closed);
  ASSERT_TRUE(until.has_value()) << "kubelet records the allocation just after Allocate returns";
  EXPECT_LE(*until, closed + 100ms);
  EXPECT_FALSE(window.unsafeUntil(closed + 101ms).has_value());
}

TEST(AllocationWindow, APreferredAllocationNoAllocateFollowedStopsHoldingListsBack) {
  AllocationWindow window({.margin = 100ms, .abandon = 300ms});
  window.opened("aws.amazon.com/neuron");
  EXPECT_TRUE(window.unsafeUntil(Clock::now() + 200ms).has_value());
  EXPECT_FALSE(window.unsafeUntil(Clock::now() + 301ms).has_value());
}

TEST(AllocationWindow, AListWaitsForTheAllocationAndAnAllocationForTheListInProgress) {
  AllocationWindow window({.margin = 50ms, .abandon = 5000ms});
  window.opened("aws.amazon.com/neuroncore");
  auto list = std::async(std::launch::async, [&] {
    const bool sent = window.beginList({}, 5000ms);
    return std::make_pair(sent, Clock::now());
  });
  EXPECT_EQ(list.wait_for(200ms), std::future_status::timeout)
      << "the List went out mid-allocation";
  const auto closedAt = Clock::now();
  window.closed("aws.amazon.com/neuroncore");
  const auto [sent, sentAt] = list.get();
  EXPECT_TRUE(sent);
  // Not before the margin after Allocate returned, however late the List's thread started.
  EXPECT_GE(sentAt, closedAt + 50ms);
  // The List is in progress: kubelet's next preferred allocation is answered after it.
  auto next = std::async(std::launch::async, [&] { window.opened("aws.amazon.com/neuroncore"); });
  EXPECT_EQ(next.wait_for(100ms), std::future_status::timeout);
  window.endList();
  next.get();
  EXPECT_TRUE(window.unsafeUntil().has_value());
}

TEST(AllocationWindow, AListThatCannotBeSentInTimeIsNotCounted) {
  AllocationWindow window({.margin = 50ms, .abandon = 5000ms});
  window.opened("aws.amazon.com/neuron");
  std::chrono::milliseconds waited{0};
  EXPECT_FALSE(window.beginList({}, 100ms, &waited));
  EXPECT_GE(waited, 100ms);
  // Nothing counted as in progress: the next allocation does not wait for a List.
  const auto started = Clock::now();
  window.opened("aws.amazon.com/neuron");
  EXPECT_LT(Clock::now() - started, 500ms);
}

}  // namespace
}  // namespace torus::kubelet
