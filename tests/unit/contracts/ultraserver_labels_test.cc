// The UltraServer labels: what the agent writes is what the operator and the extender read, and
// a pair is only ever the nodes that share server-id-2.
#include "common/contracts/ultraserver_labels.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scheduler-extender/gang/node_domains.h"
#include "ultraserver-operator/model/ultraserver_model.h"

namespace torus::contracts {
namespace {

using nlohmann::json;

topology::UltraServerPosition fullPosition() {
  return topology::UltraServerPosition{1, 3, "00000000000000aa", "00000000000000bb", {1, 3, 4}};
}

TEST(UltraServerLabels, APositionRoundTripsThroughItsLabels) {
  const topology::UltraServerPosition written = fullPosition();
  const auto labels = labelsOf(written);
  EXPECT_EQ(labels.at("neuron.amazonaws.com/ultraserver-mode"), "X4_X2V_X1");
  EXPECT_EQ(labels.at("neuron.amazonaws.com/ultraserver-server-id-4"), "00000000000000bb");
  EXPECT_EQ(labels.at("neuron.amazonaws.com/ultraserver-server-id-2"), "00000000000000aa");
  EXPECT_EQ(labels.at("neuron.amazonaws.com/ultraserver-node-id-4"), "3");
  EXPECT_EQ(labels.at("neuron.amazonaws.com/ultraserver-node-id-2"), "1");
  EXPECT_EQ(positionOf(json(labels)), written);
}

TEST(UltraServerLabels, WhatTheDriverDidNotReportHasNoLabelAndReadsBackUnreported) {
  topology::UltraServerPosition partial;
  partial.serverId4 = "bb";
  partial.nodeId4 = 0;
  const auto labels = labelsOf(partial);
  EXPECT_EQ(labels.size(), 2u);
  EXPECT_EQ(positionOf(json(labels)), partial);
  EXPECT_EQ(positionOf(json::object()), std::nullopt);
  EXPECT_EQ(positionOf(json("not labels")), std::nullopt);
  EXPECT_EQ(positionOf(json{{"topology.k8s.aws/network-node-layer-1", "nn-1"}}), std::nullopt);
}

TEST(UltraServerLabels, UnparseableValuesReadAsUnreported) {
  const json labels = {{std::string(kUltraServerNodeIdLabel), "7"},
                       {std::string(kUltraServerPairNodeIdLabel), "x"},
                       {std::string(kUltraServerModeLabel), "X4_X9_X1"},
                       {std::string(kUltraServerIdLabel), 4}};
  const auto position = positionOf(labels);
  ASSERT_TRUE(position.has_value());
  EXPECT_EQ(position->nodeId4, -1);
  EXPECT_EQ(position->nodeId2, -1);
  EXPECT_EQ(position->serverId4, "");
  EXPECT_EQ(position->supportedModes, (std::vector<int>{1, 4}));
}

// The operator and the extender's gang placement see the same pair, and neither invents one for
// a node without server-id-2.
TEST(UltraServerLabels, TheOperatorAndTheExtenderReadOnePairRule) {
  for (const bool paired : {true, false}) {
    topology::UltraServerPosition position = fullPosition();
    if (!paired) position.serverId2.clear();
    const json node = {{"metadata", {{"name", "n3"}, {"labels", labelsOf(position)}}}};
    const auto member = ultraserver::memberOf(node);
    ASSERT_TRUE(member.has_value());
    const extender::NodeDomains domains = extender::nodeDomainsFromLabels(node);
    EXPECT_EQ(member->pairId, paired ? "00000000000000aa" : "");
    EXPECT_EQ(domains.ultraServerPair, member->pairId);
    EXPECT_EQ(domains.levels[0], member->serverId);
    EXPECT_EQ(member->nodeId, 3);
  }
}

}  // namespace
}  // namespace torus::contracts
