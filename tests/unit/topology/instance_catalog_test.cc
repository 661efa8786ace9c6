#include "common/topology/instance_catalog.h"

#include <gtest/gtest.h>

#include "common/topology/node.h"

namespace torus::topology {
namespace {

constexpr std::uint64_t kGiB = 1024ULL * 1024 * 1024;

struct Expected {
  const char* name;
  int devices;
  int coresAtDefaultLnc;
  int coresAtLnc1;
  std::uint64_t memoryPerDevice;
  Interconnect interconnect;
};

TEST(InstanceCatalog, EveryTypeMatchesAwsFigures) {
  const Expected table[] = {
      {"inf1.xlarge", 1, 4, 4, 8 * kGiB, Interconnect::kNone},
      {"inf1.2xlarge", 1, 4, 4, 8 * kGiB, Interconnect::kNone},
      {"inf1.6xlarge", 4, 16, 16, 8 * kGiB, Interconnect::kRing},
      {"inf1.24xlarge", 16, 64, 64, 8 * kGiB, Interconnect::kRing},
      {"inf2.xlarge", 1, 2, 2, 32 * kGiB, Interconnect::kNone},
      {"inf2.8xlarge", 1, 2, 2, 32 * kGiB, Interconnect::kNone},
      {"inf2.24xlarge", 6, 12, 12, 32 * kGiB, Interconnect::kChain},
      {"inf2.48xlarge", 12, 24, 24, 32 * kGiB, Interconnect::kRing},
      {"trn1.2xlarge", 1, 2, 2, 32 * kGiB, Interconnect::kNone},
      {"trn1.32xlarge", 16, 32, 32, 32 * kGiB, Interconnect::kTorus2d},
      {"trn1n.32xlarge", 16, 32, 32, 32 * kGiB, Interconnect::kTorus2d},
      {"trn2.48xlarge", 16, 64, 128, 96 * kGiB, Interconnect::kTorus2d},
      {"trn2u.48xlarge", 16, 64, 128, 96 * kGiB, Interconnect::kTorus2d},
  };
  ASSERT_EQ(allInstanceTypes().size(), std::size(table));
  for (const Expected& e : table) {
    SCOPED_TRACE(e.name);
    auto node = catalogNode(e.name);
    ASSERT_TRUE(node.ok()) << node.error().message;
    EXPECT_EQ(node->deviceCount(), e.devices);
    EXPECT_EQ(node->logicalCoreCount(), e.coresAtDefaultLnc);
    EXPECT_EQ(catalogNode(e.name, 1)->logicalCoreCount(), e.coresAtLnc1);
    EXPECT_EQ(node->devices[0].memoryBytes, e.memoryPerDevice);
    EXPECT_EQ(node->interconnect, e.interconnect);
  }
  EXPECT_EQ(catalogNode("trn2.48xlarge")->devices[0].memoryBytes, 103079215104ULL);
}

TEST(InstanceCatalog, LncOnlyWhereSupported) {
  EXPECT_EQ(catalogNode("trn2.48xlarge")->lnc, 2);
  EXPECT_EQ(catalogNode("trn1.32xlarge")->lnc, 1);
  auto bad = catalogNode("inf2.48xlarge", 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "LNC 2 is not supported on inf2.48xlarge (supported: 1)");
  EXPECT_FALSE(catalogNode("trn2.48xlarge", 3).ok());
}

TEST(InstanceCatalog, HyperPodNamesAndUnknownTypes) {
  ASSERT_NE(findInstanceType("ml.trn2.48xlarge"), nullptr);
  EXPECT_EQ(findInstanceType("ml.trn2.48xlarge")->name, "trn2.48xlarge");
  EXPECT_EQ(findInstanceType("p5.48xlarge"), nullptr);
  EXPECT_EQ(catalogNode("p5.48xlarge").error().code, ErrorCode::kNotFound);
}

TEST(Node, GlobalCoreIdsFollowDeviceTimesCoresPerDevice) {
  const Node node = *catalogNode("trn2.48xlarge", 2);
  EXPECT_EQ(node.coresOfDevice(3).toRangeString(), "12-15");
  EXPECT_EQ(node.deviceOfCore(15), 3);
  EXPECT_EQ(node.deviceOfCore(64), -1);
  EXPECT_EQ(node.devicesOfCores(*CoreSet::parse("3-5")).toRangeString(), "0-1");
  const Node lnc1 = *catalogNode("trn2.48xlarge", 1);
  EXPECT_EQ(lnc1.coresOfDevice(15).toRangeString(), "120-127");
}

}  // namespace
}  // namespace torus::topology
