#include "common/topology/neuronlink_graph.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

namespace torus::topology {
namespace {

std::vector<int> neighboursOf(std::string_view type, int device) {
  return driverNeighbours(*findInstanceType(type), device);
}

TEST(NeuronLinkGraph, DriverOrderOfNeighbours) {
  EXPECT_EQ(neighboursOf("trn2.48xlarge", 0), (std::vector<int>{12, 1, 3, 4}));
  EXPECT_EQ(neighboursOf("trn2.48xlarge", 5), (std::vector<int>{4, 9, 1, 6}));
  EXPECT_EQ(neighboursOf("trn1.32xlarge", 0), (std::vector<int>{12, 3, 4, 1}));
  EXPECT_EQ(neighboursOf("trn1.32xlarge", 15), (std::vector<int>{11, 14, 3, 12}));
  EXPECT_EQ(neighboursOf("inf2.48xlarge", 0), (std::vector<int>{11, 1}));
  EXPECT_EQ(neighboursOf("inf2.48xlarge", 11), (std::vector<int>{10, 0}));
  EXPECT_EQ(neighboursOf("inf2.24xlarge", 0), (std::vector<int>{1}));
  EXPECT_EQ(neighboursOf("inf2.24xlarge", 3), (std::vector<int>{2, 4}));
  EXPECT_EQ(neighboursOf("inf2.24xlarge", 5), (std::vector<int>{4}));
  EXPECT_TRUE(neighboursOf("trn1.2xlarge", 0).empty());
}

TEST(NeuronLinkGraph, EveryCatalogTypeIsSymmetricAndConnected) {
  for (const InstanceType& type : allInstanceTypes()) {
    SCOPED_TRACE(type.name);
    const Node node = *catalogNode(type.name);
    const auto graph = NeuronLinkGraph::fromNode(node);
    EXPECT_TRUE(graph.isSymmetric());
    EXPECT_TRUE(graph.isConnected(node.allDevices()));
    for (int a = 0; a < node.deviceCount(); ++a) {
      for (int b = 0; b < node.deviceCount(); ++b)
        EXPECT_EQ(graph.linked(a, b), graph.linked(b, a));
    }
  }
}

TEST(NeuronLinkGraph, TorusIsUpDownLeftRightWithWrap) {
  for (const char* name : {"trn1.32xlarge", "trn2.48xlarge"}) {
    SCOPED_TRACE(name);
    const auto graph = NeuronLinkGraph::fromNode(*catalogNode(name));
    for (int device = 0; device < 16; ++device) {
      const int x = device % 4;
      const int y = device / 4;
      const std::set<int> expected{y * 4 + (x + 3) % 4, y * 4 + (x + 1) % 4, ((y + 3) % 4) * 4 + x,
                                   ((y + 1) % 4) * 4 + x};
      const auto got = graph.neighbours(device);
      EXPECT_EQ(std::set<int>(got.begin(), got.end()), expected) << "device " << device;
    }
    EXPECT_EQ(graph.hops(0, 10), 4);  // (0,0) -> (2,2)
    EXPECT_EQ(graph.hops(0, 15), 2);  // wraps both ways
  }
}

TEST(NeuronLinkGraph, ChainAndRingDistances) {
  const auto chain = NeuronLinkGraph::fromNode(*catalogNode("inf2.24xlarge"));
  EXPECT_EQ(chain.hops(0, 5), 5);
  EXPECT_FALSE(chain.linked(0, 5));
  const auto ring = NeuronLinkGraph::fromNode(*catalogNode("inf2.48xlarge"));
  EXPECT_EQ(ring.hops(0, 11), 1);
  EXPECT_EQ(ring.hops(0, 6), 6);
  EXPECT_TRUE(ring.isConnected(*CoreSet::parse("10-11,0")));
  EXPECT_FALSE(ring.isConnected(*CoreSet::parse("0,2")));
}

TEST(NeuronLinkGraph, OneSidedReportsAreNotLinks) {
  Node node = *catalogNode("inf2.48xlarge");
  node.devices[0].connected = {11};  // 0 no longer lists 1, but 1 still lists 0
  const auto graph = NeuronLinkGraph::fromNode(node);
  EXPECT_FALSE(graph.linked(0, 1));
  EXPECT_FALSE(graph.isSymmetric());
  ASSERT_EQ(graph.oneSidedLinks().size(), 1U);
  EXPECT_EQ(graph.oneSidedLinks()[0], std::make_pair(1, 0));
}

TEST(NeuronLinkGraph, UltraServerIsA3dTorusOfFourNodes) {
  const auto graph = NeuronLinkGraph::ultraServer(*findInstanceType("trn2u.48xlarge"));
  ASSERT_EQ(graph.size(), 64);
  for (int device = 0; device < 64; ++device) {
    EXPECT_EQ(graph.neighbours(device).size(), 6U) << device;
  }
  EXPECT_TRUE(graph.linked(5, 16 + 5));   // node 0 -> node 1, same position
  EXPECT_TRUE(graph.linked(5, 48 + 5));   // Z ring wraps from node 0 to node 3
  EXPECT_FALSE(graph.linked(5, 32 + 5));  // node 2 is two hops away
  EXPECT_EQ(graph.hops(0, 32 + 10), 6);
}

}  // namespace
}  // namespace torus::topology
