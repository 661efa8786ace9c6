// libfabric is loaded only when a communicator needs it, and a missing library is a clear error
// on every rank rather than a failure to start the program.
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "node-runtime/collectives/communicator.h"
#include "tests/integration/collectives/rank_launcher.h"

namespace torus::coll {
namespace {

using testing::LaunchOptions;
using testing::launchRanks;
using testing::summarizeFailures;

bool libfabricIsMapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libfabric") != std::string::npos) return true;
  }
  return false;
}

TEST(FabricLibrary, SharedMemoryCommunicatorsNeverLoadIt) {
  LaunchOptions options;
  options.size = 2;
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    if (libfabricIsMapped()) return "libfabric was mapped before any communicator existed";
    commOptions.transport = Transport::kShm;
    auto comm = Communicator::create(std::move(commOptions));
    if (!comm) return "create: " + comm.error().message;
    std::vector<float> data(1024, 1.0F);
    if (auto status = (*comm)->allReduce(data.data(), data.data(), data.size(), DataType::kF32,
                                         ReduceOp::kSum);
        !status) {
      return "allReduce: " + status.error().message;
    }
    return libfabricIsMapped() ? "a shared-memory communicator loaded libfabric" : "";
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

TEST(FabricLibrary, AMissingLibraryFailsEveryRankNamingThePath) {
  LaunchOptions options;
  options.size = 2;
  options.commTimeout = std::chrono::milliseconds(5000);
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    ::setenv("TORUS_COLL_LIBFABRIC", "/nonexistent/libfabric.so.1", 1);
    commOptions.transport = Transport::kOfi;
    auto comm = Communicator::create(std::move(commOptions));
    if (comm) return "create succeeded without libfabric";
    const std::string& message = comm.error().message;
    for (const char* needle : {"cannot load libfabric", "/nonexistent/libfabric.so.1",
                               "TORUS_COLL_LIBFABRIC", "shm transport"}) {
      if (message.find(needle) == std::string::npos) {
        return "error \"" + message + "\" does not mention \"" + needle + "\"";
      }
    }
    return "";
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

TEST(FabricLibrary, ALibraryWithoutTheEntryPointsIsRefused) {
  LaunchOptions options;
  options.size = 1;
  const auto outcomes = launchRanks(options, [](CommOptions commOptions) -> std::string {
    ::setenv("TORUS_COLL_LIBFABRIC", "libm.so.6", 1);  // loads fine, is not libfabric
    commOptions.transport = Transport::kOfi;
    auto comm = Communicator::create(std::move(commOptions));
    if (comm) return "create succeeded with libm as libfabric";
    const std::string& message = comm.error().message;
    if (message.find("libm.so.6 is not a usable libfabric") == std::string::npos ||
        message.find("fi_getinfo") == std::string::npos) {
      return "error \"" + message + "\" does not say which entry points are missing";
    }
    return "";
  });
  EXPECT_EQ(summarizeFailures(outcomes), "");
}

}  // namespace
}  // namespace torus::coll
