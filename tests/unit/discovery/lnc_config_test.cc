#include "node-runtime/discovery/lnc_config.h"

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"

namespace torus::discovery {
namespace {

TEST(LncConfigFile, ParsesTheLineNodeUserDataWrites) {
  EXPECT_EQ(*parseLncConfigFile("NEURON_LOGICAL_NC_CONFIG=1\n"), 1);
  EXPECT_EQ(
      *parseLncConfigFile("# written by user data\n\nexport NEURON_LOGICAL_NC_CONFIG=\"2\"\n"), 2);
  EXPECT_FALSE(parseLncConfigFile("").ok());
  EXPECT_FALSE(parseLncConfigFile("NEURON_LOGICAL_NC_CONFIG=3").ok());
  EXPECT_FALSE(parseLncConfigFile("LNC=2").ok());
  EXPECT_FALSE(parseLncConfigFile(std::string("\xff\xfe", 2)).ok());
}

class ChooseLncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("lnc-test");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    roots_ = DiscoveryRoots::under(dir_->path());
  }
  void writeLncFile(const std::string& text) {
    ASSERT_TRUE(writeFile(roots_.lncConfigFile(), text).ok());
  }
  std::optional<TempDir> dir_;
  DiscoveryRoots roots_;
  const topology::InstanceType* trn2_ = topology::findInstanceType("trn2.48xlarge");
  const topology::InstanceType* inf2_ = topology::findInstanceType("inf2.48xlarge");
};

TEST_F(ChooseLncTest, OverrideThenFileThenTypeDefault) {
  EXPECT_EQ(chooseLnc(roots_, trn2_, std::nullopt)->lnc, 2);
  EXPECT_EQ(chooseLnc(roots_, inf2_, std::nullopt)->lnc, 1);
  writeLncFile("NEURON_LOGICAL_NC_CONFIG=1\n");
  auto fromFile = chooseLnc(roots_, trn2_, std::nullopt);
  EXPECT_EQ(fromFile->lnc, 1);
  EXPECT_NE(fromFile->source.find("logical_nc_config"), std::string::npos);
  EXPECT_EQ(chooseLnc(roots_, trn2_, 2)->lnc, 2);
}

TEST_F(ChooseLncTest, BadFileWarnsAndUsesTheDefault) {
  writeLncFile("NEURON_LOGICAL_NC_CONFIG=banana\n");
  auto choice = chooseLnc(roots_, trn2_, std::nullopt);
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->lnc, 2);
  EXPECT_NE(choice->warning.find("expected 1 or 2, got \"banana\""), std::string::npos)
      << choice->warning;
  writeLncFile("NEURON_LOGICAL_NC_CONFIG=2\n");
  auto unsupported = chooseLnc(roots_, inf2_, std::nullopt);
  EXPECT_EQ(unsupported->lnc, 1);
  EXPECT_NE(unsupported->warning.find("not supported on inf2.48xlarge"), std::string::npos);
}

TEST_F(ChooseLncTest, UnsupportedOverrideIsAnError) {
  auto choice = chooseLnc(roots_, inf2_, 2);
  ASSERT_FALSE(choice.ok());
  EXPECT_EQ(choice.error().message, "LNC 2 is not supported on inf2.48xlarge (supported: 1)");
}

}  // namespace
}  // namespace torus::discovery
