// Asynchronous collectives: requests complete in posting order with the right data, test()
// reports progress, a synchronous call while requests are pending is refused, and a dead peer
// fails the pending request with its name.
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

TEST(Async, RequestsCompleteInOrderWithTheReferenceResult) {
  LaunchOptions options;
  options.size = 3;
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    auto comm = Communicator::create(std::move(commOptions));
    if (!comm) return "create: " + comm.error().message;
    Communicator& c = **comm;
    const int rank = c.rank();
    auto tensor = c.allocate(3 * 100000 * sizeof(std::int32_t));
    if (!tensor) return "allocate: " + tensor.error().message;
    auto values = tensor->as<std::int32_t>();
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = rank + static_cast<int>(i % 7);
    std::int32_t* first = values.data();
    std::int32_t* second = values.data() + 100000;
    std::vector<std::int32_t> gathered(3);
    const std::int32_t mine = rank * 10;
    // Ranks 1 and 2 post late, so rank 0's requests are certainly still pending when it
    // tries a synchronous call.
    if (rank != 0) ::usleep(300 * 1000);
    std::vector<Request> requests;
    requests.push_back(c.allReduceAsync(first, first, 100000, DataType::kI32, ReduceOp::kSum));
    requests.push_back(c.allReduceAsync(second, second, 100000, DataType::kI32, ReduceOp::kMax));
    requests.push_back(c.allGatherAsync(&mine, gathered.data(), 1, DataType::kI32));
    if (rank == 0) {
      if (requests[0].test().has_value()) return "test() says done before the peers posted";
      auto s = c.barrier();
      if (s || s.error().code != ErrorCode::kFailedPrecondition) {
        return "barrier while requests were pending was not refused";
      }
    }
    for (auto& request : requests) {
      if (auto s = request.wait(); !s) return "request: " + s.error().message;
    }
    if (!requests[0].test().has_value()) return "test() after wait() says still running";
    for (std::size_t i = 0; i < 100000; ++i) {
      const int base = static_cast<int>(i % 7);
      if (first[i] != 3 * base + 3) return "sum element " + std::to_string(i) + " wrong";
      if (second[i] != 2 + static_cast<int>((i + 100000) % 7)) {
        return "max element " + std::to_string(i) + " wrong";
      }
    }
    if (gathered != std::vector<std::int32_t>{0, 10, 20}) return "allGather wrong";
    // Synchronous calls work again once nothing is pending.
    if (auto s = c.barrier(); !s) return "barrier after wait: " + s.error().message;
    return {};
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

TEST(Async, ADeadPeerFailsThePendingRequestNamingIt) {
  LaunchOptions options;
  options.size = 2;
  options.commTimeout = std::chrono::milliseconds(30000);
  options.killRank = 1;
  options.killAfter = std::chrono::milliseconds(800);
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    auto comm = Communicator::create(std::move(commOptions));
    if (!comm) return "create: " + comm.error().message;
    if ((*comm)->rank() == 1) {
      while (true)
        ::pause();
    }
    Request request = (*comm)->barrierAsync();
    auto status = request.wait();
    if (status) return "barrier succeeded without rank 1";
    return status.error().message.find("rank 1") == std::string::npos
               ? "error does not name rank 1: " + status.error().message
               : "";
  });
  EXPECT_EQ(summarizeFailures({outcomes[0]}), "");
}

}  // namespace
}  // namespace torus::coll
