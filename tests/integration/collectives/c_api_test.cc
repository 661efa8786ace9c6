// The C API on forked ranks: create from a root address, runtime-owned tensors, AllReduce,
// split, and an error that names the missing rank through torus_last_error().
#include "node-runtime/collectives/c_api.h"

#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/integration/collectives/rank_launcher.h"

namespace torus::coll {
namespace {

using testing::LaunchOptions;
using testing::launchRanks;
using testing::summarizeFailures;

std::string cApiBody(CommOptions options) {
  // The C API binds the root address itself: give the launcher's socket back first.
  options.rootListener.reset();
  torus_comm* comm = nullptr;
  if (torus_comm_create(options.rank, options.size, options.rootAddress.c_str(), 10000, &comm) !=
      TORUS_OK) {
    return std::string("create: ") + torus_last_error();
  }
  std::string failure;
  auto* data = static_cast<float*>(torus_comm_alloc(comm, 1000 * sizeof(float)));
  if (data == nullptr) failure = std::string("alloc: ") + torus_last_error();
  if (failure.empty()) {
    for (int i = 0; i < 1000; ++i)
      data[i] = static_cast<float>(torus_comm_rank(comm) + i);
    if (torus_allreduce(comm, data, data, 1000, TORUS_F32, TORUS_MAX) != TORUS_OK) {
      failure = std::string("allreduce: ") + torus_last_error();
    } else if (data[10] != static_cast<float>(torus_comm_size(comm) - 1 + 10)) {
      failure = "allreduce max gave " + std::to_string(data[10]);
    }
    torus_comm_free(comm, data);
  }
  if (failure.empty()) {
    torus_comm* half = nullptr;
    if (torus_comm_split(comm, torus_comm_rank(comm) % 2, 0, &half) != TORUS_OK) {
      failure = std::string("split: ") + torus_last_error();
    } else {
      int one = 1;
      if (torus_allreduce(half, &one, &one, 1, TORUS_I32, TORUS_SUM) != TORUS_OK || one != 2) {
        failure = "allreduce on the split gave " + std::to_string(one);
      }
      torus_comm_destroy(half);
    }
  }
  // What a C caller's stray int arrives as; the library must refuse it without reading it as the
  // enum (clang's UBSan checks that).
  if (failure.empty() && torus_allreduce(comm, nullptr, nullptr, 0, static_cast<torus_dtype>(42),
                                         TORUS_SUM) != TORUS_ERR_INVALID_ARGUMENT) {
    failure = "a bad dtype was accepted";
  }
  torus_comm_destroy(comm);
  return failure;
}

TEST(CApi, CreateAllocateReduceAndSplitOnFourRanks) {
  LaunchOptions options;
  options.size = 4;
  EXPECT_EQ(summarizeFailures(launchRanks(options, cApiBody)), "");
}

TEST(CApi, TimeoutStatusAndMessageNameTheMissingRank) {
  LaunchOptions options;
  options.size = 2;
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    commOptions.rootListener.reset();
    torus_comm* comm = nullptr;
    if (torus_comm_create(commOptions.rank, 2, commOptions.rootAddress.c_str(), 500, &comm) !=
        TORUS_OK) {
      return std::string("create: ") + torus_last_error();
    }
    std::string failure;
    if (torus_comm_rank(comm) == 1) {
      ::usleep(1500 * 1000);  // skips the barrier
    } else {
      const torus_status status = torus_barrier(comm);
      const std::string message = torus_last_error();
      if (status != TORUS_ERR_DEADLINE_EXCEEDED) {
        failure = "status " + std::to_string(status) + ": " + message;
      } else if (message.find("rank 1") == std::string::npos) {
        failure = "message does not name rank 1: " + message;
      }
    }
    torus_comm_destroy(comm);
    return failure;
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

}  // namespace
}  // namespace torus::coll
