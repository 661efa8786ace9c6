// The labels, annotation and condition the agent publishes, as a function of the node model.
#include "node-runtime/agent/rules/node_metadata.h"

#include <gtest/gtest.h>

#include "common/contracts/topology_annotation.h"

namespace torus::agent {
namespace {

TEST(NodeMetadata, HealthyTrn2) {
  auto node = topology::catalogNode("trn2.48xlarge");
  ASSERT_TRUE(node.ok());
  const NodeMetadata metadata = nodeMetadata(*node);
  EXPECT_EQ(metadata.labels.at("torus.dev/lnc"), "2");
  EXPECT_EQ(metadata.labels.at("torus.dev/instance-type"), "trn2.48xlarge");
  EXPECT_EQ(metadata.labels.at("torus.dev/device-count"), "16");
  EXPECT_EQ(metadata.labels.at("torus.dev/healthy-devices"), "16");
  EXPECT_EQ(metadata.labels.count("neuron.amazonaws.com/ultraserver-mode"), 0U);
  EXPECT_TRUE(metadata.healthy);
  EXPECT_EQ(metadata.reason, "AllDevicesHealthy");
  auto topology = contracts::parseTopologyAnnotation(metadata.annotations.at("torus.dev/topology"));
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(topology->links[0], (std::vector<int>{12, 1, 3, 4}));
}

TEST(NodeMetadata, AHeldBackLncChangeIsInTheCondition) {
  auto node = topology::catalogNode("trn2.48xlarge");
  ASSERT_TRUE(node.ok());
  NodeMetadata metadata = nodeMetadata(*node, 1);
  EXPECT_TRUE(metadata.healthy);
  EXPECT_EQ(metadata.reason, "LNCChangePending");
  EXPECT_NE(metadata.message.find("asks for LNC 1, which renumbers every core: LNC 2 stays in "
                                  "force until no pod holds a core"),
            std::string::npos)
      << metadata.message;
  EXPECT_EQ(metadata.labels.at("torus.dev/lnc"), "2");
  node->devices[3].health = topology::DeviceHealth::unhealthy(
      topology::HealthDimension::kDeviceLost, "ResetStateInvalid", "reset=2");
  metadata = nodeMetadata(*node, 1);
  EXPECT_EQ(metadata.reason, "UnhealthyDevices") << "the worse news leads";
  EXPECT_NE(metadata.message.find("asks for LNC 1"), std::string::npos);
}

TEST(NodeMetadata, UltraServerLabelsAndAnUnhealthyDevice) {
  auto node = topology::catalogNode("trn2u.48xlarge");
  ASSERT_TRUE(node.ok());
  node->ultraServer = topology::UltraServerPosition{1, 3, "a1b2", "c3d4", {1, 2, 3, 4}};
  node->devices[7].health = topology::DeviceHealth::unhealthy(
      topology::HealthDimension::kEccUncorrected, "mem", "mem_ecc_uncorrected=2");
  const NodeMetadata metadata = nodeMetadata(*node);
  EXPECT_EQ(metadata.labels.at("neuron.amazonaws.com/ultraserver-mode"), "X4_X2H_X2V_X1");
  EXPECT_EQ(metadata.labels.at("neuron.amazonaws.com/ultraserver-server-id-2"), "a1b2");
  EXPECT_EQ(metadata.labels.at("neuron.amazonaws.com/ultraserver-server-id-4"), "c3d4");
  EXPECT_EQ(metadata.labels.at("neuron.amazonaws.com/ultraserver-node-id-2"), "1");
  EXPECT_EQ(metadata.labels.at("neuron.amazonaws.com/ultraserver-node-id-4"), "3");
  EXPECT_EQ(metadata.labels.at("torus.dev/healthy-devices"), "15");
  EXPECT_FALSE(metadata.healthy);
  EXPECT_EQ(metadata.reason, "UnhealthyDevices");
  EXPECT_EQ(metadata.message, "out of service: neuron7 (mem_ecc_uncorrected=2)");
  for (const auto& [key, value] : metadata.labels) {
    EXPECT_TRUE(ownedLabel(key)) << key;
    EXPECT_EQ(value.find(','), std::string::npos) << "not a valid label value: " << value;
  }
  EXPECT_FALSE(ownedLabel("node.kubernetes.io/instance-type"));
  EXPECT_FALSE(ownedLabel("torus.dev/neuron-mode"));  // the operator's, kept by the agent
  EXPECT_TRUE(ownedAnnotation("torus.dev/topology"));
  EXPECT_FALSE(ownedAnnotation("AWS_NEURON_IDS"));
}

}  // namespace
}  // namespace torus::agent
