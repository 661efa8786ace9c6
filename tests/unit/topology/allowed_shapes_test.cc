#include "common/topology/allowed_shapes.h"

#include <gtest/gtest.h>

#include "common/topology/neuronlink_graph.h"

namespace torus::topology {
namespace {

ShapeRules rulesOf(std::string_view type) {
  return shapeRulesOf(*catalogNode(type));
}

std::vector<std::string> asText(const std::vector<DeviceSet>& sets) {
  std::vector<std::string> text;
  for (const DeviceSet& set : sets)
    text.push_back(set.toRangeString());
  return text;
}

TEST(AllowedShapes, TorusAllowsOneRowTwoAdjacentRowsOrAll) {
  for (const char* name : {"trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "trn2u.48xlarge"}) {
    SCOPED_TRACE(name);
    const ShapeRules rules = rulesOf(name);
    EXPECT_EQ(allowedDeviceCounts(rules), (std::vector<int>{1, 4, 8, 16}));
    EXPECT_EQ(allowedDeviceSets(rules, 1).size(), 16U);
    EXPECT_EQ(asText(allowedDeviceSets(rules, 4)),
              (std::vector<std::string>{"0-3", "4-7", "8-11", "12-15"}));
    EXPECT_EQ(asText(allowedDeviceSets(rules, 8)),
              (std::vector<std::string>{"0-7", "4-11", "8-15"}));
    EXPECT_EQ(asText(allowedDeviceSets(rules, 16)), (std::vector<std::string>{"0-15"}));
    EXPECT_TRUE(allowedDeviceSets(rules, 7).empty());
    EXPECT_TRUE(allowedDeviceSets(rules, 2).empty());
    EXPECT_FALSE(isAllowedDeviceSet(rules, *CoreSet::parse("2-5")));
    EXPECT_TRUE(isAllowedDeviceSet(rules, *CoreSet::parse("4-11")));
  }
}

TEST(AllowedShapes, RingsAndChainsAllowEveryRunWithoutWrap) {
  const ShapeRules ring = rulesOf("inf2.48xlarge");
  EXPECT_EQ(allowedDeviceCounts(ring).size(), 12U);
  EXPECT_EQ(allowedDeviceSets(ring, 3).size(), 10U);  // 0-2 ... 9-11
  EXPECT_FALSE(isAllowedDeviceSet(ring, *CoreSet::parse("11,0,1")));
  EXPECT_FALSE(isAllowedDeviceSet(ring, *CoreSet::parse("0,2,4")));
  const ShapeRules chain = rulesOf("inf2.24xlarge");
  EXPECT_EQ(asText(allowedDeviceSets(chain, 5)), (std::vector<std::string>{"0-4", "1-5"}));
  EXPECT_EQ(allowedDeviceCounts(rulesOf("inf2.xlarge")), (std::vector<int>{1}));
}

// Every set placement may hand out is NeuronLink-connected and has contiguous core ids, on every
// catalog type and every size: the two properties the Neuron runtime needs.
TEST(AllowedShapes, EveryAllowedSetIsConnectedWithContiguousCores) {
  for (const InstanceType& type : allInstanceTypes()) {
    for (const int lnc : {1, 2}) {
      auto node = catalogNode(type.name, lnc);
      if (!node.ok()) continue;
      const auto graph = NeuronLinkGraph::fromNode(*node);
      const ShapeRules rules = shapeRulesOf(*node);
      for (const int count : allowedDeviceCounts(rules)) {
        for (const DeviceSet& set : allowedDeviceSets(rules, count)) {
          SCOPED_TRACE(std::string(type.name) + " " + set.toRangeString());
          EXPECT_EQ(set.size(), count);
          EXPECT_TRUE(graph.isConnected(set));
          EXPECT_TRUE(node->coresOfDevices(set).isContiguous());
        }
      }
    }
  }
}

}  // namespace
}  // namespace torus::topology
