// The simulator numbers devices as the driver does: each generation's routing-id table, copied
// here from the driver's source as a second, independent reading (aws-neuron-driver 2.24.7.0), and
// every layout a permutation of the type's devices with one function each.
#include "node-runtime/simulator/sim_pci_layout.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "common/topology/instance_catalog.h"

namespace torus::simulator {
namespace {

using topology::Generation;

// v2/neuron_dhal_v2.c:1047-1051, v2_routing_id_to_user_id.
constexpr int kDriverV2Table[16] = {0, 4, 1, 5, 3, 7, 2, 6, 12, 8, 13, 9, 15, 11, 14, 10};
// v3/neuron_dhal_v3.c:1300-1304, v3_routing_id_to_user_id.
constexpr int kDriverV3Table[16] = {0, 3, 4, 7, 12, 15, 8, 11, 1, 2, 5, 6, 13, 14, 9, 10};

TEST(SimPciLayout, RoutingIdTablesAreTheDriversAndRepeatEverySixteen) {
  for (int routing = 0; routing < 32; ++routing) {
    const int base = routing / 16 * 16;
    EXPECT_EQ(driverDeviceIndex(Generation::kTrn1, routing), kDriverV2Table[routing % 16] + base);
    EXPECT_EQ(driverDeviceIndex(Generation::kTrn2, routing), kDriverV3Table[routing % 16] + base);
    // inf2 takes the routing id as it is (v2:1097-1100); inf1 counts probes (neuron_pci.c:256).
    EXPECT_EQ(driverDeviceIndex(Generation::kInf2, routing), routing);
    EXPECT_EQ(driverDeviceIndex(Generation::kInf1, routing), routing);
  }
}

TEST(SimPciLayout, EveryTypeHasOneFunctionPerDeviceInAddressOrder) {
  for (const topology::InstanceType& type : topology::allInstanceTypes()) {
    const SimulatedPciLayout layout = simulatedPciLayout(type);
    ASSERT_EQ(static_cast<int>(layout.neuron.size()), type.deviceCount) << type.name;
    EXPECT_FALSE(layout.source.empty());
    std::set<int> indices;
    std::set<std::string> functions;
    for (const SimulatedNeuronFunction& function : layout.neuron) {
      indices.insert(function.index);
      functions.insert(function.bdf);
      EXPECT_TRUE(function.root.starts_with("pci0000:")) << function.root;
      EXPECT_EQ(layout.functionOfDevice(function.index), &function);
    }
    EXPECT_EQ(static_cast<int>(indices.size()), type.deviceCount) << type.name;
    EXPECT_EQ(*indices.rbegin(), type.deviceCount - 1) << type.name;
    EXPECT_EQ(functions.size(), layout.neuron.size()) << type.name;
    EXPECT_TRUE(std::is_sorted(layout.neuron.begin(), layout.neuron.end(),
                               [](const auto& a, const auto& b) { return a.bdf < b.bdf; }));
    EXPECT_EQ(static_cast<int>(layout.efa.size()), type.efaInterfaces) << type.name;
    EXPECT_EQ(layout.functionOfDevice(type.deviceCount), nullptr);
  }
}

// The published trn2: neuron0 at cc:00.0 has routing id 0, neuron1 at b5:00.0 routing id 8 (the
// v3 table's 1 sits at position 8), and the lines read as the driver prints them.
TEST(SimPciLayout, ProbeLinesAreTheDriversFormat) {
  const SimulatedPciLayout trn2 = simulatedPciLayout(*topology::findInstanceType("trn2.48xlarge"));
  const SimulatedNeuronFunction* first = trn2.functionOfDevice(1);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->bdf, "0000:b5:00.0");
  EXPECT_EQ(first->routingId, 8);
  EXPECT_EQ(driverProbeLine(Generation::kTrn2, *first),
            "neuron:neuron_pci_get_device_id_v3: ** BDF: b5:00.0 => nd[1] (routing id: 8)");
  const SimulatedPciLayout trn1 = simulatedPciLayout(*topology::findInstanceType("trn1.32xlarge"));
  EXPECT_EQ(driverProbeLine(Generation::kTrn1, trn1.neuron[1]),
            "** BDF: 10:1c.0 => nd[4] (routing id: 1)");
  EXPECT_EQ(driverProbeLine(Generation::kInf1, trn1.neuron[1]), "") << "v1 logs no such line";
}

}  // namespace
}  // namespace torus::simulator
