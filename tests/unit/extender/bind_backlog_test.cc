#include "scheduler-extender/verbs/bind_backlog.h"

#include <future>
#include <optional>

#include <gtest/gtest.h>

namespace torus::extender {
namespace {

using namespace std::chrono_literals;

TEST(BindBacklog, FilterGoesOnAtOnceBelowTheLimitAndWaitsAtMostMaxWaitAtIt) {
  BindBacklog backlog({.inFlight = 2, .maxWait = 20ms});
  const BindBacklog::Entry first = backlog.enter();
  EXPECT_EQ(backlog.waitForRoom(), std::chrono::steady_clock::duration::zero());
  {
    const BindBacklog::Entry second = backlog.enter();
    EXPECT_EQ(backlog.inFlight(), 2U);
    EXPECT_GE(backlog.waitForRoom(), 20ms) << "no bind ended: the wait is bounded";
    EXPECT_EQ(backlog.waits(), 1U);
    EXPECT_GT(backlog.secondsWaited(), 0.0);
  }
  EXPECT_EQ(backlog.inFlight(), 1U);
  EXPECT_EQ(backlog.waitForRoom(), std::chrono::steady_clock::duration::zero());
}

TEST(BindBacklog, ABindEndingMakesRoomForTheWaitingFilter) {
  BindBacklog backlog({.inFlight = 1, .maxWait = 60s});
  std::optional<BindBacklog::Entry> bind;
  bind.emplace(backlog);  // as enter() does, so it can be ended from here
  auto filter = std::async(std::launch::async, [&] { return backlog.waitForRoom(); });
  bind.reset();
  ASSERT_EQ(filter.wait_for(30s), std::future_status::ready);
  EXPECT_LT(filter.get(), 60s) << "woken by the bind's end, not by maxWait";
  EXPECT_EQ(backlog.inFlight(), 0U);
}

}  // namespace
}  // namespace torus::extender
