// The instances the simulator serves: every catalog type, and the ones EC2 sells that the catalog
// leaves out, which must stay unknown to the catalog (or they would test nothing). And the
// driver's rule for connected_devices, read a second time from its source (aws-neuron-driver
// 2.24.7.0: fw_io_topology_v1/v2/v3).
#include "node-runtime/simulator/sim_instance.h"

#include <gtest/gtest.h>

namespace torus::simulator {
namespace {

using topology::Generation;

TEST(SimInstance, TheDriverListsNeighboursOnlyForTheChipCountsItHasATableFor) {
  for (const Generation generation : {Generation::kTrn1, Generation::kTrn2}) {
    EXPECT_TRUE(driverListsNeighbours(generation, 16));
    EXPECT_TRUE(driverListsNeighbours(generation, 32));
    for (const int count : {0, 1, 4, 15})
      EXPECT_FALSE(driverListsNeighbours(generation, count)) << count;
  }
  EXPECT_TRUE(driverListsNeighbours(Generation::kInf2, 6));
  EXPECT_TRUE(driverListsNeighbours(Generation::kInf2, 12));
  for (const int count : {1, 4, 11, 16})
    EXPECT_FALSE(driverListsNeighbours(Generation::kInf2, count)) << count;
  // v1 reads its east and west links from the chip.
  EXPECT_TRUE(driverListsNeighbours(Generation::kInf1, 4));
}

// The catalog's wiring and the driver's tables agree: every catalog type with NeuronLink has a
// chip count the driver lists neighbours for.
TEST(SimInstance, EveryCatalogTypeWithLinksHasACountTheDriverHasATableFor) {
  for (const topology::InstanceType& type : topology::allInstanceTypes()) {
    if (type.interconnect == topology::Interconnect::kNone) continue;
    EXPECT_TRUE(driverListsNeighbours(type.generation, type.deviceCount)) << type.name;
  }
}

TEST(SimInstance, CatalogTypesAreTheCatalogsOwn) {
  auto instance = simulatedInstance("ml.trn2.48xlarge");
  ASSERT_TRUE(instance.ok()) << instance.error().message;
  EXPECT_TRUE(instance->catalogued);
  EXPECT_EQ(instance->type.name, "trn2.48xlarge");
  EXPECT_EQ(instance->type.deviceCount, 16);
}

TEST(SimInstance, Trn2ThreeXlargeIsOneTrainium2TheCatalogDoesNotKnow) {
  EXPECT_EQ(topology::findInstanceType("trn2.3xlarge"), nullptr);
  for (const char* name : {"trn2.3xlarge", "ml.trn2.3xlarge"}) {
    auto instance = simulatedInstance(name);
    ASSERT_TRUE(instance.ok()) << instance.error().message;
    EXPECT_FALSE(instance->catalogued);
    EXPECT_FALSE(instance->source.empty());
    const topology::InstanceType& type = instance->type;
    EXPECT_EQ(type.name, "trn2.3xlarge");
    EXPECT_EQ(type.generation, Generation::kTrn2);
    EXPECT_EQ(type.deviceCount, 1);
    EXPECT_EQ(type.physicalCoresPerDevice / type.defaultLnc, 4);  // 4 NeuronCores at LNC 2
    EXPECT_EQ(type.efaInterfaces, 0);
    EXPECT_FALSE(driverListsNeighbours(type.generation, type.deviceCount));
  }
}

TEST(SimInstance, AnUnknownNameListsEveryInstanceTheSimulatorServes) {
  auto instance = simulatedInstance("trn9.big");
  ASSERT_FALSE(instance.ok());
  EXPECT_EQ(instance.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(instance.error().message.find("unknown instance type \"trn9.big\""), std::string::npos);
  EXPECT_NE(instance.error().message.find("trn2.48xlarge"), std::string::npos);
  EXPECT_NE(instance.error().message.find("not in Torus's catalog: trn2.3xlarge"),
            std::string::npos);
}

}  // namespace
}  // namespace torus::simulator
