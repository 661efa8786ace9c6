// Leader election over the API-server stand-in's Leases: one holder at a time, a takeover only
// after the candidate itself has seen the record unrenewed for the lease's duration, a write
// that lost a race is a lost election and not an error, stop() hands the lease on at once, and
// a leader that cannot renew stops acting.
#include "common/kube/leader_lease.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/kube/fake_api_server.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::kube {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::eventually;
using testing::FakeApiServer;
using testing::kLeases;

constexpr const char* kLeaseKey = "kube-system/operator";

class LeaderLeaseTest : public ::testing::Test {
 protected:
  std::unique_ptr<LeaderLease> candidate(const std::string& identity, LeaseCallbacks callbacks = {},
                                         std::chrono::milliseconds duration = 400ms) {
    KubeConfig config;
    config.server = api_.url();
    config.token = BearerToken::fixed("t");
    LeaseOptions options;
    options.nameSpace = "kube-system";
    options.name = "operator";
    options.identity = identity;
    options.leaseDuration = duration;
    options.renewDeadline = 300ms;
    options.retryPeriod = 50ms;
    return std::make_unique<LeaderLease>(config, options, std::move(callbacks));
  }
  std::string holder() const {
    const auto lease = api_.get(kLeases, kLeaseKey);
    return lease ? (*lease)["spec"].value("holderIdentity", "") : "(no lease)";
  }
  json spec() const { return (*api_.get(kLeases, kLeaseKey))["spec"]; }

  FakeApiServer api_;
};

TEST_F(LeaderLeaseTest, TheFirstCandidateCreatesTheLeaseAndTheSecondWaits) {
  auto a = candidate("a");
  auto b = candidate("b");
  ASSERT_EQ(a->tryAcquireOrRenew().value(), true);
  EXPECT_EQ(holder(), "a");
  EXPECT_EQ(spec()["leaseTransitions"], 0);
  EXPECT_EQ(b->tryAcquireOrRenew().value(), false);
  const json before = spec();
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(a->tryAcquireOrRenew().value(), true) << "the holder renews";
  EXPECT_NE(spec()["renewTime"], before["renewTime"]);
  EXPECT_EQ(spec()["acquireTime"], before["acquireTime"]) << "a renewal is no new acquisition";
  EXPECT_EQ(spec()["leaseTransitions"], 0);
  EXPECT_EQ(b->tryAcquireOrRenew().value(), false) << "a renewed lease is not taken over";
  EXPECT_EQ(holder(), "a");
}

TEST_F(LeaderLeaseTest, ATakeoverWaitsForTheDurationByTheCandidatesOwnClock) {
  auto a = candidate("a");
  auto b = candidate("b");
  ASSERT_EQ(a->tryAcquireOrRenew().value(), true);
  // b first sees the record now; a stops renewing. Until b has seen it unchanged for the
  // lease's duration it does not take over, whatever the record's renewTime says.
  EXPECT_EQ(b->tryAcquireOrRenew().value(), false);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(b->tryAcquireOrRenew().value(), false) << "half the duration";
  std::this_thread::sleep_for(250ms);
  ASSERT_EQ(b->tryAcquireOrRenew().value(), true) << "the duration passed unrenewed";
  EXPECT_EQ(holder(), "b");
  EXPECT_EQ(spec()["leaseTransitions"], 1);
  EXPECT_EQ(a->tryAcquireOrRenew().value(), false) << "the old holder sees it lost";
}

TEST_F(LeaderLeaseTest, AWriteThatLostTheRaceIsALostElectionNotAnError) {
  auto a = candidate("a");
  auto b = candidate("b");
  ASSERT_EQ(a->tryAcquireOrRenew().value(), true);
  api_.failNext("POST", "/leases", 409);  // b also found no lease, and a created it first
  auto c = candidate("c");
  api_.remove(kLeases, kLeaseKey);
  auto lost = c->tryAcquireOrRenew();
  ASSERT_TRUE(lost.ok()) << lost.error().message;
  EXPECT_FALSE(*lost);
  // A replace that another candidate's write beat (409 Conflict on resourceVersion).
  ASSERT_EQ(a->tryAcquireOrRenew().value(), true);
  api_.failNext("PUT", "/leases/operator", 409);
  auto beaten = a->tryAcquireOrRenew();
  ASSERT_TRUE(beaten.ok()) << beaten.error().message;
  EXPECT_FALSE(*beaten);
  api_.failNext("GET", "/leases/operator", 500);
  EXPECT_FALSE(b->tryAcquireOrRenew().ok()) << "an API that cannot answer is an error";
}

TEST_F(LeaderLeaseTest, StopHandsTheLeaseOnWithoutWaitingOutItsDuration) {
  std::atomic<int> started = 0;
  auto a = candidate("a", {[&] { ++started; }, {}}, 60s);
  a->start();
  ASSERT_TRUE(eventually([&] { return a->isLeader(); }, 5s));
  // The callback runs on the lease's thread just after it becomes leader, once.
  ASSERT_TRUE(eventually([&] { return started.load() == 1; }, 5s));
  a->stop();
  EXPECT_EQ(started.load(), 1);
  EXPECT_FALSE(a->isLeader());
  EXPECT_EQ(holder(), "") << "released";
  auto b = candidate("b", {}, 60s);
  EXPECT_EQ(b->tryAcquireOrRenew().value(), true) << "a released lease is free at once";
}

TEST_F(LeaderLeaseTest, ALeaderThatCannotRenewStopsActing) {
  std::atomic<int> stopped = 0;
  auto a = candidate("a", {{}, [&] { ++stopped; }});
  a->start();
  ASSERT_TRUE(eventually([&] { return a->isLeader(); }, 5s));
  for (int i = 0; i < 100; ++i)
    api_.failNext("GET", "/leases/operator", 503);  // the API is unreachable for ~5 s
  ASSERT_TRUE(eventually([&] { return !a->isLeader(); }, 5s)) << "past the renew deadline";
  EXPECT_EQ(stopped.load(), 1);
  a->stop();
}

}  // namespace
}  // namespace torus::kube
