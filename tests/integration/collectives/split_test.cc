// Sub-communicators: split by color and key on forked ranks, collectives inside each group,
// the parent still usable, a rank opting out, and a dead member named by its group.
#include <numeric>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "node-runtime/collectives/communicator.h"
#include "tests/integration/collectives/rank_launcher.h"

namespace torus::coll {
namespace {

using testing::LaunchOptions;
using testing::launchRanks;
using testing::summarizeFailures;

// 7 ranks: color = rank % 2 except rank 6, which opts out (color -1); key = -rank, so the
// highest parent rank becomes rank 0 of its group.
std::string splitAndReduce(CommOptions options) {
  auto comm = Communicator::create(std::move(options));
  if (!comm) return "create: " + comm.error().message;
  const int rank = (*comm)->rank();
  const int color = rank == 6 ? -1 : rank % 2;
  auto group = (*comm)->split(color, -rank);
  if (!group) return "split: " + group.error().message;
  if (color < 0) {
    if (*group) return "rank 6 opted out but got a communicator";
  } else {
    std::vector<int> members;
    for (int r = 0; r < 6; ++r) {
      if (r % 2 == color) members.push_back(r);
    }
    Communicator& g = **group;
    if (g.size() != 3) return "group size " + std::to_string(g.size()) + ", expected 3";
    const int expectedRank = (members.back() - rank) / 2;  // ordered by -rank
    if (g.rank() != expectedRank) {
      return "group rank " + std::to_string(g.rank()) + ", expected " +
             std::to_string(expectedRank);
    }
    // Large enough for the direct path, on a runtime buffer of the group.
    auto tensor = g.allocate(10000 * sizeof(std::int64_t));
    if (!tensor) return "allocate: " + tensor.error().message;
    auto values = tensor->as<std::int64_t>();
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = rank * 1000 + static_cast<int>(i);
    if (auto s = g.allReduce(values.data(), values.data(), values.size(), DataType::kI64,
                             ReduceOp::kSum);
        !s) {
      return "group allReduce: " + s.error().message;
    }
    const std::int64_t memberSum = std::accumulate(members.begin(), members.end(), 0) * 1000;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i] != memberSum + 3 * static_cast<std::int64_t>(i)) {
        return "group allReduce element " + std::to_string(i) + " = " + std::to_string(values[i]);
      }
    }
    std::int32_t one = 1;
    if (auto s = g.allReduce(&one, &one, 1, DataType::kI32, ReduceOp::kSum); !s || one != 3) {
      return "small group allReduce gave " + std::to_string(one);
    }
  }
  // The parent keeps working after the split.
  std::int32_t total = rank;
  if (auto s = (*comm)->allReduce(&total, &total, 1, DataType::kI32, ReduceOp::kSum); !s) {
    return "parent allReduce after split: " + s.error().message;
  }
  return total == 21 ? "" : "parent allReduce gave " + std::to_string(total);
}

TEST(Split, GroupsByColorRankByKeyAndLeaveTheParentUsable) {
  LaunchOptions options;
  options.size = 7;
  options.commTimeout = std::chrono::milliseconds(20000);
  EXPECT_EQ(summarizeFailures(launchRanks(options, splitAndReduce)), "");
}

// The same over libfabric: every rank on its own endpoint, and ranks on "hosts" of two (the
// groups then span hosts and share the parent's endpoint under their own tag group).
TEST(Split, OverLibfabricGroupsShareTheEndpointAndLeaveTheParentUsable) {
  LaunchOptions options;
  options.size = 7;
  options.commTimeout = std::chrono::milliseconds(20000);
  EXPECT_EQ(summarizeFailures(launchRanks(options,
                                          [](CommOptions commOptions) {
                                            commOptions.transport = Transport::kOfi;
                                            return splitAndReduce(std::move(commOptions));
                                          })),
            "");
  EXPECT_EQ(summarizeFailures(launchRanks(options,
                                          [](CommOptions commOptions) {
                                            commOptions.hostId =
                                                "host" + std::to_string(commOptions.rank / 2);
                                            return splitAndReduce(std::move(commOptions));
                                          })),
            "");
}

TEST(Split, ADeadMemberIsNamedByItsGroup) {
  LaunchOptions options;
  options.size = 4;
  options.commTimeout = std::chrono::milliseconds(30000);
  options.killRank = 3;
  options.killAfter = std::chrono::milliseconds(1500);
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    auto comm = Communicator::create(std::move(commOptions));
    if (!comm) return "create: " + comm.error().message;
    const int rank = (*comm)->rank();
    auto group = (*comm)->split(rank / 2, rank);  // {0,1} and {2,3}
    if (!group) return "split: " + group.error().message;
    if (rank == 3) {
      while (true)
        ::pause();
    }
    auto status = (**group).barrier();
    if (rank == 2) {
      if (status) return "group barrier succeeded without parent rank 3";
      const std::string& message = status.error().message;
      // Rank 3 of the parent is rank 1 of the group.
      if (message.find("rank 1") == std::string::npos ||
          message.find("/split1.1") == std::string::npos) {
        return "error does not name group rank 1 and the group: " + message;
      }
      return {};
    }
    return status ? "" : "group {0,1} failed: " + status.error().message;
  });
  EXPECT_FALSE(outcomes[3].exited);
  for (int r : {0, 1, 2}) {
    EXPECT_TRUE(outcomes[r].exited && outcomes[r].exitCode == 0)
        << "rank " << r << ": " << outcomes[r].message;
  }
}

}  // namespace
}  // namespace torus::coll
