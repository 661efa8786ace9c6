// The bootstrap against connections that are not the job's ranks: a forged hello
// and a silent connection, with the job secret set, do not fail or stall the job; a rank with the
// wrong secret is kept out and named missing.
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/base/unique_fd.h"
#include "tests/integration/collectives/rank_launcher.h"
#include "tests/integration/loopback_socket.h"

namespace torus::coll::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Every rank but 0 waits `late` before joining, so whatever the intruder sends arrives first.
RankBody createAfter(std::chrono::milliseconds late, std::chrono::milliseconds within) {
  return [late, within](CommOptions options) -> std::string {
    if (options.rank != 0) std::this_thread::sleep_for(late);
    const auto start = Clock::now();
    auto comm = Communicator::create(std::move(options));
    if (!comm) return comm.error().message;
    const auto took = Clock::now() - start;
    if (took > within + late) {
      return "creation took " +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) +
             " ms";
    }
    return {};
  };
}

TEST(BootstrapAuth, ForgedHellosDoNotFailAJobWithASecret) {
  LaunchOptions options;
  options.size = 4;
  options.commTimeout = 10s;
  options.jobSecret = "job-7f3a";
  options.intruder = [](int port) {
    // The probe's line (no proof), one with a made-up proof, and one that is not a hello at all.
    for (const std::string& line :
         {std::string("TORUS-COLL/1 1 4 4242 h m\n"),
          std::string("TORUS-COLL/1 2 4 4243 h m 00112233445566778899aabbccddeeff\n"),
          std::string("GET / HTTP/1.1\n")}) {
      UniqueFd fd = torus::testing::connectLoopback(port);
      (void)torus::testing::sendAll(fd.get(), line);
    }
  };
  const auto outcomes = launchRanks(options, createAfter(300ms, 3s));
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

TEST(BootstrapAuth, ASilentConnectionDoesNotHoldTheRootUntilTheDeadline) {
  LaunchOptions options;
  options.size = 3;
  options.commTimeout = 20s;  // the probe: creation took 18.7 s of a 20 s timeout
  options.jobSecret = "job-silent";
  options.intruder = [](int port) {
    UniqueFd fd = torus::testing::connectLoopback(port);
    std::this_thread::sleep_for(6s);  // says nothing, holds the connection open
  };
  const auto outcomes = launchRanks(options, createAfter(200ms, 2s));
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

TEST(BootstrapAuth, ARankWithTheWrongSecretIsKeptOutAndNamedMissing) {
  LaunchOptions options;
  options.size = 3;
  options.commTimeout = 1500ms;
  options.jobSecret = "the-job";
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    const int rank = commOptions.rank;
    if (rank == 2) commOptions.jobSecret = "another-job";
    auto comm = Communicator::create(std::move(commOptions));
    if (comm) return "rank " + std::to_string(rank) + " joined";
    const std::string& message = comm.error().message;
    if (rank == 2) {  // told why at once
      return message.find(
                 "refused this rank: a hello whose proof does not match the job "
                 "secret") != std::string::npos
                 ? ""
                 : "unexpected: " + message;
    }
    return message.find("rank 2") != std::string::npos ? "" : "unexpected: " + message;
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

}  // namespace
}  // namespace torus::coll::testing
