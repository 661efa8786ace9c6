// The shared-memory group on its own, without forking: two (or three) members in threads of this
// process, each with its own ShmGroup of one session, as ranks in different processes would be.
#include "node-runtime/collectives/shm/shm_group.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

namespace torus::coll {
namespace {

using namespace std::chrono_literals;

std::uint64_t freshSession() {
  static std::atomic<std::uint64_t> counter{1};
  return (static_cast<std::uint64_t>(::getpid()) << 32) ^ (counter++ * 0x9e3779b97f4a7c15ULL) ^
         static_cast<std::uint64_t>(std::random_device{}());
}

// `size` members of one session, attached; member r's errors name the ranks by `labels`.
class Members {
 public:
  explicit Members(int size, std::vector<int> labels = {}, std::chrono::milliseconds timeout = 5s)
      : timeout_(timeout) {
    const std::uint64_t session = freshSession();
    RankInfo me;
    me.pid = static_cast<int>(::getpid());
    me.hostId = "this-host";
    for (int r = 0; r < size; ++r) {
      ShmGroupOptions options;
      options.session = session;
      options.rank = r;
      options.ranks.assign(static_cast<std::size_t>(size), me);
      options.labels = labels;
      options.spin = false;  // the members share this test's CPUs
      groups_.push_back(std::make_unique<ShmGroup>(std::move(options)));
    }
    auto control = ShmGroup::createControl(session, size);
    EXPECT_TRUE(control.ok()) << control.error().message;
    std::vector<Result<void>> attached(static_cast<std::size_t>(size), okResult());
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) {
      threads.emplace_back([&, r] {
        attached[static_cast<std::size_t>(r)] = groups_[static_cast<std::size_t>(r)]->attach(
            r == 0 ? std::move(*control) : ShmSegment(), "test", timeout_);
      });
    }
    for (auto& thread : threads)
      thread.join();
    for (const auto& result : attached)
      EXPECT_TRUE(result.ok()) << result.error().message;
  }

  ShmGroup& operator[](int r) { return *groups_[static_cast<std::size_t>(r)]; }

  // Runs body(rank, call) on every member at once; returns each member's result.
  std::vector<Result<void>> run(const std::function<Result<void>(int, const GroupCall&)>& body) {
    std::vector<Result<void>> results(groups_.size(), okResult());
    std::vector<std::thread> threads;
    for (std::size_t r = 0; r < groups_.size(); ++r) {
      threads.emplace_back([&, r] {
        const auto what = [r] { return "op on member " + std::to_string(r); };
        const GroupCall call{1, Clock::now() + timeout_, timeout_, what};
        results[r] = body(static_cast<int>(r), call);
      });
    }
    for (auto& thread : threads)
      thread.join();
    return results;
  }

 private:
  std::chrono::milliseconds timeout_;
  std::vector<std::unique_ptr<ShmGroup>> groups_;
};

TEST(ShmGroup, AllReduceOverTheSlotsAndTheDirectPathMatchesTheSum) {
  Members members(3);
  for (const std::size_t count : {std::size_t{2}, std::size_t{100'000}}) {  // 8 B, 400 KB
    std::vector<std::vector<float>> in(3), out(3);
    for (int r = 0; r < 3; ++r) {
      in[static_cast<std::size_t>(r)].assign(count, static_cast<float>(r + 1));
      out[static_cast<std::size_t>(r)].assign(count, -1.0F);
    }
    const auto results = members.run([&](int r, const GroupCall& call) {
      return members[r].allReduce(call, in[static_cast<std::size_t>(r)].data(),
                                  out[static_cast<std::size_t>(r)].data(), count, DataType::kF32,
                                  ReduceOp::kSum);
    });
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(results[static_cast<std::size_t>(r)].ok())
          << results[static_cast<std::size_t>(r)].error().message;
      EXPECT_EQ(out[static_cast<std::size_t>(r)].front(), 6.0F) << "count " << count;
      EXPECT_EQ(out[static_cast<std::size_t>(r)].back(), 6.0F) << "count " << count;
    }
  }
}

TEST(ShmGroup, AllGatherBroadcastAndARuntimeTensorWork) {
  Members members(2);
  auto tensor = members[1].allocate(4 * sizeof(int), "test");
  ASSERT_TRUE(tensor.ok()) << tensor.error().message;
  std::iota(tensor->as<int>().begin(), tensor->as<int>().end(), 10);  // 10 11 12 13
  std::vector<int> received(4, 0);
  auto results = members.run([&](int r, const GroupCall& call) {
    return r == 1 ? members[r].broadcast(call, tensor->data(), tensor->data(), 4, DataType::kI32, 1)
                  : members[r].broadcast(call, nullptr, received.data(), 4, DataType::kI32, 1);
  });
  for (const auto& result : results)
    ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(received, (std::vector<int>{10, 11, 12, 13}));

  std::vector<std::vector<int>> gathered(2, std::vector<int>(2, 0));
  results = members.run([&](int r, const GroupCall& call) {
    const int mine = 100 + r;
    return members[r].allGather(call, &mine, gathered[static_cast<std::size_t>(r)].data(), 1,
                                DataType::kI32);
  });
  for (const auto& result : results)
    ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(gathered[0], (std::vector<int>{100, 101}));
  EXPECT_EQ(gathered[1], (std::vector<int>{100, 101}));
}

TEST(ShmGroup, PermuteAroundARingDeliversEveryMessage) {
  Members members(3);
  std::vector<double> got(3, 0.0);
  const auto results = members.run([&](int r, const GroupCall& call) {
    const double mine = 1.5 * r;
    return members[r].permute(call, &mine, &got[static_cast<std::size_t>(r)], sizeof(double),
                              (r + 1) % 3, (r + 2) % 3, 1, 1);
  });
  for (const auto& result : results)
    ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(got, (std::vector<double>{3.0, 0.0, 1.5}));
}

TEST(ShmGroup, DifferentCollectivesAreNamedNotMixed) {
  Members members(2, {4, 9});  // ranks 4 and 9 of some communicator
  float value = 1.0F;
  float out[2] = {};
  const auto results = members.run([&](int r, const GroupCall& call) {
    return r == 0 ? members[r].allReduce(call, &value, out, 1, DataType::kF32, ReduceOp::kSum)
                  : members[r].allReduce(call, &value, out, 1, DataType::kF32, ReduceOp::kMax);
  });
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(results[0].error().message.find("op on member 0"), std::string::npos);
  EXPECT_NE(results[0].error().message.find("rank 9 called allReduce"), std::string::npos)
      << results[0].error().message;
  EXPECT_NE(results[0].error().message.find("op=max"), std::string::npos);
}

TEST(ShmGroup, AnAbsentMemberIsNamedByItsLabelWhenTheTimeoutRunsOut) {
  Members members(2, {4, 9}, 300ms);
  const auto what = [] { return std::string("barrier alone"); };
  const GroupCall call{1, Clock::now() + 300ms, 300ms, what};
  const auto started = Clock::now();
  const auto result = members[0].barrier(call);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_NE(result.error().message.find("barrier alone: nothing from rank 9 (pid "),
            std::string::npos)
      << result.error().message;
  EXPECT_GE(Clock::now() - started, 300ms);
}

TEST(ShmGroup, AMemberThatGaveUpEndsThePeersWaitWithItsReason) {
  Members members(2);
  members[1].markAborted("out of patience");
  const auto what = [] { return std::string("barrier"); };
  const GroupCall call{1, Clock::now() + 5s, 5s, what};
  const auto started = Clock::now();
  const auto result = members[0].barrier(call);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kAborted);
  EXPECT_NE(result.error().message.find("rank 1 gave up: out of patience"), std::string::npos)
      << result.error().message;
  EXPECT_LT(Clock::now() - started, 1s);
}

TEST(ShmGroup, TroubleElsewhereEndsAWaitAtOnce) {
  Members members(2);
  members[0].setTrouble([] { return std::optional<std::string>("rank 7 is gone"); });
  const auto what = [] { return std::string("host stage"); };
  const GroupCall call{1, Clock::now() + 5s, 5s, what};
  const auto started = Clock::now();
  const auto result = members[0].barrier(call);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(result.error().message, "host stage: rank 7 is gone");
  EXPECT_LT(Clock::now() - started, 1s);
}

TEST(ShmGroup, SlowWaitsPublishWhomTheyWaitForByLabel) {
  Members members(2, {4, 9}, 200ms);
  CommStatus status;
  bool published = false;
  members[0].setStatus(&status, &published);
  const auto what = [] { return std::string("barrier"); };
  const GroupCall call{1, Clock::now() + 200ms, 200ms, what};
  EXPECT_FALSE(members[0].barrier(call).ok());
  EXPECT_TRUE(published);
  std::lock_guard lock(status.mutex);
  EXPECT_EQ(status.waitingFor, std::vector<int>{9});
}

}  // namespace
}  // namespace torus::coll
