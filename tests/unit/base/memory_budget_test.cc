#include "common/base/memory_budget.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace torus {
namespace {

using namespace std::chrono_literals;

TEST(MemoryBudget, ReservationsTakeTurnsWithinTheTotal) {
  MemoryBudget budget(100, 1'000'000);
  auto first = budget.reserve(60, 0ms);
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(budget.reserve(60, 20ms).has_value());  // no room, and nothing frees any
  auto small = budget.reserve(40, 0ms);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(budget.inUse(), 100u);

  std::optional<MemoryBudget::Lease> waited;
  std::jthread waiter([&] { waited = budget.reserve(60, 2000ms); });
  std::this_thread::sleep_for(50ms);
  first.reset();  // frees 60: the waiter gets it
  waiter.join();
  EXPECT_TRUE(waited.has_value());
  EXPECT_EQ(budget.inUse(), 100u);
}

TEST(MemoryBudget, OneReservationLargerThanTheTotalRunsAlone) {
  MemoryBudget budget(100, 1'000'000);
  {
    auto other = budget.reserve(10, 0ms);
    ASSERT_TRUE(other.has_value());
    EXPECT_FALSE(budget.reserve(500, 20ms).has_value());
  }
  auto huge = budget.reserve(500, 0ms);
  ASSERT_TRUE(huge.has_value());
  EXPECT_FALSE(budget.reserve(1, 20ms).has_value());
  huge.reset();
  EXPECT_EQ(budget.inUse(), 0u);
}

}  // namespace
}  // namespace torus
