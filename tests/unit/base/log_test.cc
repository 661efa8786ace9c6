#include "common/base/log.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace torus::log {
namespace {

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setSinkForTesting([this](std::string_view line) { lines_.emplace_back(line); });
  }
  void TearDown() override {
    setSinkForTesting(nullptr);
    configure(Settings{});
  }
  std::vector<std::string> lines_;
};

TEST_F(LogTest, TextLineHasLevelComponentQuotedMessageAndFields) {
  configure(Settings{Level::kInfo, 0, Format::kText});
  TORUS_LOG(Info, Plugin, "registered with kubelet", {"resource", "aws.amazon.com/neuroncore"},
            {"elapsed_ms", 3}, {"reason", "has space"});
  ASSERT_EQ(lines_.size(), 1U);
  const std::string& line = lines_[0];
  EXPECT_NE(line.find("Z INFO plugin \"registered with kubelet\" "
                      "resource=aws.amazon.com/neuroncore elapsed_ms=3 reason=\"has space\""),
            std::string::npos)
      << line;
}

TEST_F(LogTest, LevelFilteringAndPerComponentDebug) {
  configure(Settings{Level::kWarn, *parseComponentList("discovery"), Format::kText});
  TORUS_LOG(Info, Plugin, "dropped");
  TORUS_LOG(Debug, Plugin, "dropped too");
  TORUS_LOG(Debug, Discovery, "kept because discovery is in --log-debug");
  TORUS_LOG(Error, Plugin, "kept");
  ASSERT_EQ(lines_.size(), 2U);
  EXPECT_NE(lines_[0].find("DEBUG discovery"), std::string::npos);
  EXPECT_NE(lines_[1].find("ERROR plugin"), std::string::npos);
}

TEST_F(LogTest, RunTimeLevelIsFilteredLikeACompileTimeOne) {
  const auto fourRanksReady = [] {
    for (int rank = 0; rank < 4; ++rank) {
      TORUS_LOG_AT(rank == 0 ? Level::kInfo : Level::kDebug, Coll, "communicator ready",
                   {"rank", rank});
    }
  };
  configure(Settings{Level::kInfo, 0, Format::kText});
  fourRanksReady();
  ASSERT_EQ(lines_.size(), 1U);
  EXPECT_NE(lines_[0].find("INFO coll \"communicator ready\" rank=0"), std::string::npos)
      << lines_[0];

  lines_.clear();
  configure(Settings{Level::kInfo, *parseComponentList("coll"), Format::kText});
  fourRanksReady();
  ASSERT_EQ(lines_.size(), 4U);
  EXPECT_NE(lines_[3].find("DEBUG coll \"communicator ready\" rank=3"), std::string::npos)
      << lines_[3];
}

TEST_F(LogTest, JsonFormatEmitsTheSameFields) {
  configure(Settings{Level::kInfo, 0, Format::kJson});
  TORUS_LOG(Warn, Health, "device unhealthy", {"device", 3}, {"healthy", false});
  ASSERT_EQ(lines_.size(), 1U);
  EXPECT_NE(lines_[0].find("\"level\":\"WARN\",\"component\":\"health\",\"message\":\"device "
                           "unhealthy\",\"device\":3,\"healthy\":false}"),
            std::string::npos)
      << lines_[0];
}

TEST_F(LogTest, DisabledLevelsDoNotEvaluateFields) {
  configure(Settings{Level::kError, 0, Format::kText});
  int evaluations = 0;
  const auto expensive = [&] {
    ++evaluations;
    return std::string("x");
  };
  TORUS_LOG(Info, Plugin, "skipped", {"value", expensive()});
  EXPECT_EQ(evaluations, 0);
}

TEST(LogParse, RejectsUnknownNames) {
  EXPECT_FALSE(parseLevel("verbose").ok());
  auto mask = parseComponentList("coll,nonsense");
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.error().message.find("\"nonsense\""), std::string::npos);
  EXPECT_FALSE(parseFormat("xml").ok());
}

}  // namespace
}  // namespace torus::log
