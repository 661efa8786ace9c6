// The status query: while a collective waits, the report names the op, its sequence number and
// the ranks (with pids) not there yet; SIGUSR1 writes the report through the reporter thread.
#include "node-runtime/collectives/core/status.h"

#include <chrono>
#include <csignal>
#include <thread>

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include "node-runtime/collectives/communicator.h"
#include "tests/integration/collectives/rank_launcher.h"

namespace torus::coll {
namespace {

using testing::LaunchOptions;
using testing::launchRanks;
using testing::summarizeFailures;

std::string mentions(const std::string& text, std::initializer_list<std::string> needles) {
  for (const auto& needle : needles) {
    if (text.find(needle) == std::string::npos) {
      return "report \"" + text + "\" lacks \"" + needle + "\"";
    }
  }
  return {};
}

TEST(Status, ReportNamesTheCollectiveAndTheRanksBeingWaitedFor) {
  LaunchOptions options;
  options.size = 3;
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    auto comm = Communicator::create(std::move(commOptions));
    if (!comm) return "create: " + comm.error().message;
    const int rank = (*comm)->rank();
    if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    std::string report;
    std::thread observer([&report] {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      report = statusReport();
    });
    auto status = (*comm)->barrier();
    observer.join();
    if (!status) return "barrier: " + status.error().message;
    if (rank == 2) return {};
    const std::string after = statusReport();
    if (auto e = mentions(after, {"idle after seq=1"}); !e.empty()) return e;
    return mentions(report, {"comm=test-comm rank=" + std::to_string(rank) + "/3",
                             "barrier seq=1 running", "waiting for rank 2 (pid"});
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

TEST(Status, SignalWritesTheReportAndABrokenCommunicatorSaysWhy) {
  LaunchOptions options;
  options.size = 2;
  options.commTimeout = std::chrono::milliseconds(300);
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    auto comm = Communicator::create(std::move(commOptions));
    if (!comm) return "create: " + comm.error().message;
    if ((*comm)->rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // skips the barrier
      return {};
    }
    if ((*comm)->barrier()) return "barrier succeeded without rank 1";
    int fds[2];
    if (::pipe(fds) != 0) return "pipe failed";
    if (auto installed = installStatusSignal(SIGUSR1, fds[1]); !installed) {
      return installed.error().message;
    }
    ::kill(::getpid(), SIGUSR1);
    pollfd pfd{fds[0], POLLIN, 0};
    if (::poll(&pfd, 1, 3000) != 1) return "no report within 3 s of SIGUSR1";
    char text[4096] = {};
    const ssize_t n = ::read(fds[0], text, sizeof(text) - 1);
    if (n <= 0) return "empty report";
    return mentions(text, {"comm=test-comm rank=0/2 broken:", "nothing from rank 1"});
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

}  // namespace
}  // namespace torus::coll
