// neuron-cc-bench's settings made into a runnable world: sizes, hosts, ranks and the job secret,
// with errors that name the flags.
#include "node-runtime/cli/neuron_cc_bench/bench_config.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace torus::cli {
namespace {

class BenchConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("TORUS_COLL_JOB_SECRET"); }
  void TearDown() override { ::unsetenv("TORUS_COLL_JOB_SECRET"); }

  static std::string problemWith(BenchConfig config) {
    auto finished = finishBenchConfig(config);
    EXPECT_FALSE(finished.ok());
    if (finished.ok()) return "";
    EXPECT_EQ(finished.error().code, ErrorCode::kInvalidArgument);
    return finished.error().message;
  }
};

TEST_F(BenchConfigTest, SizesTakeBinarySuffixes) {
  EXPECT_EQ(parseBytes("4096").valueOr(0), 4096u);
  EXPECT_EQ(parseBytes("64K").valueOr(0), 64u << 10);
  EXPECT_EQ(parseBytes("64m").valueOr(0), 64u << 20);
  EXPECT_EQ(parseBytes("1G").valueOr(0), 1u << 30);
  EXPECT_FALSE(parseBytes("lots").ok());
  EXPECT_FALSE(parseBytes("-8").ok());
}

TEST_F(BenchConfigTest, AWholeWorldOnThisHostGetsItsSizesAndAMadeUpSecret) {
  BenchConfig config;
  config.ranks = 4;
  config.minBytes = "1K";
  config.maxBytes = "1M";
  config.buffers = "user";
  ASSERT_TRUE(finishBenchConfig(config).ok());
  EXPECT_EQ(config.worldSize, 4);
  EXPECT_EQ(config.bench.minBytes, 1024u);
  EXPECT_EQ(config.bench.maxBytes, 1u << 20);
  EXPECT_FALSE(config.bench.runtimeBuffers);
  EXPECT_EQ(config.jobSecret.size(), 32u);
  BenchConfig again = config;
  ASSERT_TRUE(finishBenchConfig(again).ok());
  EXPECT_NE(again.jobSecret, config.jobSecret);  // one per run
}

TEST_F(BenchConfigTest, RanksJoiningAnotherRunTakeTheSecretFromTheEnvironmentOnly) {
  BenchConfig joining;
  joining.worldSize = 4;
  joining.ranks = 2;
  joining.firstRank = 2;
  joining.rootAddress = "10.0.0.1:29500";
  ASSERT_TRUE(finishBenchConfig(joining).ok());
  EXPECT_TRUE(joining.jobSecret.empty());  // no made-up secret the root could not know
  ::setenv("TORUS_COLL_JOB_SECRET", "shared-by-the-job", 1);
  ASSERT_TRUE(finishBenchConfig(joining).ok());
  EXPECT_EQ(joining.jobSecret, "shared-by-the-job");
}

TEST_F(BenchConfigTest, FlagsThatCannotWorkTogetherAreNamed) {
  BenchConfig sizes;
  sizes.minBytes = "1M";
  sizes.maxBytes = "1K";
  EXPECT_NE(problemWith(sizes).find("--min-bytes 1M is larger than --max-bytes 1K"),
            std::string::npos);
  BenchConfig buffers;
  buffers.buffers = "gpu";
  EXPECT_NE(problemWith(buffers).find("--buffers"), std::string::npos);
  BenchConfig world;
  world.worldSize = 2;
  world.ranks = 2;
  world.firstRank = 1;
  world.rootAddress = "127.0.0.1:5000";
  EXPECT_NE(problemWith(world).find("is more than --world-size 2"), std::string::npos);
  BenchConfig noPort;
  noPort.worldSize = 4;
  noPort.firstRank = 2;
  EXPECT_NE(problemWith(noPort).find("give its --root-address with the port"), std::string::npos);
  BenchConfig hosts;
  hosts.ranks = 4;
  hosts.hosts = 3;
  EXPECT_NE(problemWith(hosts).find("--hosts 3 does not split --ranks 4"), std::string::npos);
  BenchConfig sendRecv;
  sendRecv.bench.op = BenchOp::kSendRecv;
  sendRecv.ranks = 1;
  EXPECT_NE(problemWith(sendRecv).find("needs --ranks 2"), std::string::npos);
  sendRecv.ranks = 2;
  sendRecv.bench.inPlace = true;
  EXPECT_NE(problemWith(sendRecv).find("no in-place form"), std::string::npos);
}

}  // namespace
}  // namespace torus::cli
