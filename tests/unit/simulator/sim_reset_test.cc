// The simulated driver's reset (what neuron-sim-driver answers through neuronN/reset), on a clock
// the test moves: reads 0 while a reset runs, then READY or INVALID; a write while a process
// holds the device node is ignored, as the driver ignores it.
#include "node-runtime/simulator/sim_reset.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/unique_fd.h"

namespace torus::simulator {
namespace {

using std::chrono::milliseconds;

class SimReset : public ::testing::Test {
 protected:
  void SetUp() override {
    auto created = TempDir::create("sim-reset");
    ASSERT_TRUE(created.ok());
    dir_.emplace(std::move(*created));
    ASSERT_TRUE(writeFile(dir_->path() / "dev" / "neuron0", "").ok());
    ASSERT_TRUE(writeFile(dir_->path() / "dev" / "neuron1", "").ok());
  }

  SimulatedResets resets() {
    return SimulatedResets(
        {dir_->path(), milliseconds(300), "/proc", dir_->path() / "dev", [this] { return now_; }});
  }
  void advance(milliseconds by) { now_ += by; }
  std::filesystem::path path(const char* relative) const { return dir_->path() / relative; }

 private:
  std::optional<TempDir> dir_;
  std::chrono::steady_clock::time_point now_{};
};

TEST_F(SimReset, AResetReadsZeroForItsDurationThenReady) {
  SimulatedResets driver = resets();
  EXPECT_EQ(driver.read(0), "1\n");
  ASSERT_TRUE(driver.write(0, "1\n").ok());
  EXPECT_EQ(driver.read(0), "0\n");
  advance(milliseconds(299));
  EXPECT_EQ(driver.read(0), "0\n");
  EXPECT_EQ(driver.read(1), "1\n");  // the other device was never reset
  advance(milliseconds(1));
  EXPECT_EQ(driver.read(0), "1\n");
  EXPECT_EQ(driver.counts().started, 1);
}

TEST_F(SimReset, BehaviourFilesMakeAResetSlowOrFailAndAreReadAtEachReset) {
  SimulatedResets driver = resets();
  ASSERT_TRUE(writeFile(resetBehaviourFile(path(""), 0), "fail\n").ok());
  ASSERT_TRUE(driver.write(0, "1").ok());
  advance(milliseconds(300));
  EXPECT_EQ(driver.read(0), "2\n");  // INVALID, and it stays so
  advance(milliseconds(5000));
  EXPECT_EQ(driver.read(0), "2\n");
  ASSERT_TRUE(writeFile(resetBehaviourFile(path(""), 0), "slow 2000\n").ok());
  ASSERT_TRUE(driver.write(0, "1").ok());
  advance(milliseconds(1999));
  EXPECT_EQ(driver.read(0), "0\n");
  advance(milliseconds(1));
  EXPECT_EQ(driver.read(0), "1\n");  // a good reset heals an INVALID device
  EXPECT_EQ(driver.counts().failed, 1);
}

TEST_F(SimReset, AWriteWhileTheDeviceIsOpenIsIgnored) {
  SimulatedResets driver = resets();
  {
    const UniqueFd holder(::open(path("dev/neuron0").c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(holder.valid());
    ASSERT_TRUE(driver.write(0, "1").ok());  // accepted, and nothing happens: no error either
    EXPECT_EQ(driver.read(0), "1\n");
    EXPECT_EQ(driver.counts().ignoredWhileHeld, 1);
    EXPECT_EQ(driver.counts().started, 0);
  }
  ASSERT_TRUE(driver.write(0, "1").ok());
  EXPECT_EQ(driver.read(0), "0\n");
}

TEST_F(SimReset, OnlyOneStartsAResetAndBadBehaviourFilesFallBackToTheDefault) {
  SimulatedResets driver = resets();
  for (const char* text : {"0", "2", "", "reset", "11"}) {
    auto written = driver.write(1, text);
    ASSERT_FALSE(written.ok()) << text;
    EXPECT_NE(written.error().message.find("only 1 starts a reset"), std::string::npos);
  }
  ASSERT_TRUE(writeFile(resetBehaviourFile(path(""), 1), "melt\n").ok());
  ASSERT_TRUE(driver.write(1, "1").ok());
  advance(milliseconds(300));
  EXPECT_EQ(driver.read(1), "1\n");
}

TEST(ResetBehaviour, ParsesItsThreeForms) {
  const milliseconds standard(300);
  EXPECT_TRUE(parseResetBehaviour("fail", standard)->fails);
  EXPECT_EQ(parseResetBehaviour("fail", standard)->duration, standard);
  EXPECT_EQ(parseResetBehaviour("fail 50\n", standard)->duration, milliseconds(50));
  EXPECT_FALSE(parseResetBehaviour("slow 4000", standard)->fails);
  EXPECT_EQ(parseResetBehaviour("slow 4000", standard)->duration, milliseconds(4000));
  for (const char* text : {"", "slow", "slow x", "fail -1", "fast 3", "slow 1 2", "700000"}) {
    EXPECT_FALSE(parseResetBehaviour(text, standard).ok()) << text;
  }
}

}  // namespace
}  // namespace torus::simulator
