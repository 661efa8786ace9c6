#include "common/topology/placement.h"

#include <random>

#include <gtest/gtest.h>

#include "common/topology/allowed_shapes.h"
#include "common/topology/neuronlink_graph.h"

namespace torus::topology {
namespace {

CoreSet ids(const char* text) {
  return *CoreSet::parse(text);
}

std::string place(const Node& node, AllocationUnit unit, int count, const CoreSet& available,
                  const CoreSet& required = {}) {
  auto result = choosePlacement(node, {unit, count, available, required});
  return result.ok() ? result->toRangeString() : "error: " + result.error().message;
}

TEST(Placement, FourCoresOnTrn2AreOneWholeDevice) {
  const Node node = *catalogNode("trn2.48xlarge");
  EXPECT_EQ(place(node, AllocationUnit::kCore, 4, node.allCores()), "0-3");
  // With device 0 partly used, a 2-core request fills device 0 rather than breaking device 1.
  EXPECT_EQ(place(node, AllocationUnit::kCore, 2, node.allCores() - ids("0-1")), "2-3");
}

TEST(Placement, SixteenCoresOnTrn2AreOneTorusRow) {
  const Node node = *catalogNode("trn2.48xlarge");
  EXPECT_EQ(place(node, AllocationUnit::kCore, 16, node.allCores()), "0-15");
  // Row 0 is partly used: the next 16 cores take a whole row, not a run across rows.
  EXPECT_EQ(place(node, AllocationUnit::kCore, 16, node.allCores() - ids("0")), "16-31");
}

TEST(Placement, EightDevicesAreTwoAdjacentRows) {
  const Node node = *catalogNode("trn2.48xlarge");
  EXPECT_EQ(place(node, AllocationUnit::kDevice, 8, node.allDevices()), "0-7");
  EXPECT_EQ(place(node, AllocationUnit::kDevice, 8, node.allDevices() - ids("0")), "8-15");
  EXPECT_EQ(place(node, AllocationUnit::kDevice, 8, node.allDevices() - ids("0,15")), "4-11");
  EXPECT_EQ(place(node, AllocationUnit::kDevice, 8, node.allDevices() - ids("0,6,15")),
            "error: no free, NeuronLink-connected allowed set of 8 devices on trn2.48xlarge "
            "(free devices: 1-5,7-14)");
}

TEST(Placement, UnsupportedDeviceCountsNameTheAllowedOnes) {
  const Node node = *catalogNode("trn1.32xlarge");
  auto result = choosePlacement(node, {AllocationUnit::kDevice, 7, node.allDevices(), {}});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(result.error().message,
            "placement: instance type trn1.32xlarge does not support requests for 7 devices "
            "(allowed: 1, 4, 8, 16)");
  EXPECT_FALSE(choosePlacement(node, {AllocationUnit::kCore, 33, node.allCores(), {}}).ok());
  EXPECT_FALSE(choosePlacement(node, {AllocationUnit::kCore, 0, node.allCores(), {}}).ok());
}

TEST(Placement, RingRunsOnInf2) {
  const Node ring = *catalogNode("inf2.48xlarge");
  EXPECT_EQ(place(ring, AllocationUnit::kDevice, 3, ring.allDevices()), "0-2");
  // Best fit: the 3-run goes into the 3-hole, leaving the 6-run whole.
  EXPECT_EQ(place(ring, AllocationUnit::kDevice, 3, ids("0-2,6-11")), "0-2");
  EXPECT_EQ(place(ring, AllocationUnit::kDevice, 3, ids("1-3,5-11")), "1-3");
  EXPECT_EQ(place(ring, AllocationUnit::kDevice, 3, ids("0,2,4,6,8,10")).substr(0, 6), "error:");
  const Node chain = *catalogNode("inf2.24xlarge");
  EXPECT_EQ(place(chain, AllocationUnit::kDevice, 2, ids("0,4-5")), "4-5");
}

TEST(Placement, MustIncludeIsHonoured) {
  const Node node = *catalogNode("trn2.48xlarge");
  EXPECT_EQ(place(node, AllocationUnit::kCore, 4, node.allCores(), ids("9")), "8-11");
  EXPECT_EQ(place(node, AllocationUnit::kDevice, 4, node.allDevices(), ids("13")), "12-15");
  EXPECT_EQ(place(node, AllocationUnit::kCore, 2, node.allCores(), ids("3-4")), "3-4");
  EXPECT_NE(place(node, AllocationUnit::kCore, 1, node.allCores(), ids("3-4")).find("do not fit"),
            std::string::npos);
  EXPECT_NE(place(node, AllocationUnit::kCore, 4, ids("0-3"), ids("7")).find("not available"),
            std::string::npos);
}

TEST(Placement, ACutLinkIsRoutedAround) {
  Node node = *catalogNode("inf2.48xlarge");
  // 4-5 cut: a run across it is not connected, so the next run is chosen.
  std::erase(node.devices[4].connected, 5);
  std::erase(node.devices[5].connected, 4);
  EXPECT_EQ(place(node, AllocationUnit::kDevice, 6, node.allDevices()), "6-11");
}

// The rule choosePlacement applies, stated on its own for sets someone else chose.
TEST(Placement, CheckPlacementStatesTheRuleForAChosenSet) {
  Node node = *catalogNode("inf2.48xlarge");  // 12 devices in a line/ring, 2 cores each at LNC 1
  EXPECT_TRUE(checkPlacement(node, AllocationUnit::kDevice, CoreSet::range(4, 2)).ok());
  EXPECT_TRUE(checkPlacement(node, AllocationUnit::kCore, CoreSet::range(8, 4)).ok());
  std::erase(node.devices[4].connected, 5);
  std::erase(node.devices[5].connected, 4);
  const auto devices = checkPlacement(node, AllocationUnit::kDevice, CoreSet::range(4, 2));
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.error().message,
            "devices 4-5 are not NeuronLink-connected (a link between them is down)");
  const int perDevice = node.logicalCoresPerDevice();
  const auto cores =
      checkPlacement(node, AllocationUnit::kCore, CoreSet::range(4 * perDevice, 2 * perDevice));
  ASSERT_FALSE(cores.ok());
  EXPECT_NE(cores.error().message.find("span devices 4-5"), std::string::npos)
      << cores.error().message;
  // Every set choosePlacement picks passes the check.
  for (int count = 1; count <= node.deviceCount(); ++count) {
    auto chosen = choosePlacement(node, {AllocationUnit::kDevice, count, node.allDevices(), {}});
    if (chosen) {
      EXPECT_TRUE(checkPlacement(node, AllocationUnit::kDevice, *chosen).ok()) << count;
    }
  }
  CoreSet gappy = CoreSet::range(0, 2);
  gappy.insert(3);
  EXPECT_NE(checkPlacement(node, AllocationUnit::kCore, gappy)
                .error()
                .message.find("not one run of consecutive ids"),
            std::string::npos);
  EXPECT_FALSE(checkPlacement(node, AllocationUnit::kDevice, CoreSet::range(11, 2)).ok());
  EXPECT_FALSE(checkPlacement(node, AllocationUnit::kCore, CoreSet{}).ok());
}

// A scripted sequence on a trn2.48xlarge: after mixed arrivals and departures, a new request
// still lands where it keeps the largest free shape intact.
TEST(Placement, AfterFragmentationTheLargestFreeShapeSurvives) {
  const Node node = *catalogNode("trn2.48xlarge");
  CoreSet free = node.allCores();
  const auto take = [&](int count) {
    const CoreSet cores = *choosePlacement(node, {AllocationUnit::kCore, count, free, {}});
    free -= cores;
    return cores;
  };
  EXPECT_EQ(take(4).toRangeString(), "0-3");  // device 0
  const CoreSet row = take(16);               // a whole row, not a run across rows 0 and 1
  EXPECT_EQ(row.toRangeString(), "16-31");
  EXPECT_EQ(take(2).toRangeString(), "4-5");  // fills row 0, which is already broken
  free |= row;                                // the 16-core pod leaves
  // Rows 1-3 are free; 32 cores (8 devices) take the aligned pair of rows 2-3 and leave row 1
  // whole, next to row 0, rather than a run starting in row 0's leftovers.
  const CoreSet d = take(32);
  EXPECT_EQ(node.devicesOfCores(d).toRangeString(), "8-15");
  EXPECT_TRUE(node.coresOfDevices(ids("4-7")).isSubsetOf(free));
}

// Exhaustive on small nodes: for every free set and size, placement succeeds exactly when some
// valid set exists (brute force over allowed shapes), and what it returns is valid.
TEST(Placement, ExhaustiveOnSmallNodesFindsAValidSetIffOneExists) {
  for (const char* name : {"inf1.6xlarge", "inf2.24xlarge"}) {
    const Node node = *catalogNode(name);
    const auto graph = NeuronLinkGraph::fromNode(node);
    const int devices = node.deviceCount();
    for (int mask = 0; mask < (1 << devices); ++mask) {
      DeviceSet available;
      for (int d = 0; d < devices; ++d) {
        if ((mask >> d) & 1) available.insert(d);
      }
      for (int count = 1; count <= devices; ++count) {
        bool exists = false;
        for (const DeviceSet& set : allowedDeviceSets(shapeRulesOf(node), count)) {
          exists = exists || (set.isSubsetOf(available) && graph.isConnected(set));
        }
        auto result = choosePlacement(node, {AllocationUnit::kDevice, count, available, {}});
        ASSERT_EQ(result.ok(), exists) << name << " mask=" << mask << " count=" << count;
        if (result.ok()) {
          EXPECT_TRUE(result->isSubsetOf(available));
          EXPECT_EQ(result->size(), count);
          EXPECT_TRUE(isAllowedDeviceSet(shapeRulesOf(node), *result));
        }
      }
    }
  }
}

TEST(Placement, RandomCoreRequestsAreAlwaysContiguousAndFree) {
  std::mt19937 random(11);
  for (const char* name : {"trn2.48xlarge", "trn1.32xlarge", "inf2.48xlarge"}) {
    const Node node = *catalogNode(name);
    for (int iteration = 0; iteration < 300; ++iteration) {
      CoreSet available;
      node.allCores().forEach([&](int core) {
        if (random() % 4 != 0) available.insert(core);
      });
      const int count = 1 + static_cast<int>(random() % 8);
      auto result = choosePlacement(node, {AllocationUnit::kCore, count, available, {}});
      if (!result.ok()) {
        EXPECT_EQ(result.error().code, ErrorCode::kResourceExhausted);
        continue;
      }
      EXPECT_EQ(result->size(), count);
      EXPECT_TRUE(result->isContiguous());
      EXPECT_TRUE(result->isSubsetOf(available));
    }
  }
}

}  // namespace
}  // namespace torus::topology
