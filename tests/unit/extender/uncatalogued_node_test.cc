// A node of a type the catalog lacks (a new size the chart placed an agent on by a node label):
// the extender, and kubectl neuron through the same mirror, place on it as its agent reports it
// while kubelet advertises its devices; without both it is no Neuron node.
#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/contracts/neuron_names.h"
#include "common/contracts/topology_annotation.h"
#include "scheduler-extender/kube/cluster_mirror.h"
#include "scheduler-extender/state/cluster_state.h"
#include "tests/unit/extender/test_pods.h"

namespace torus::extender {
namespace {

using nlohmann::json;

// A node whose kubelet advertises `cores` aws.amazon.com/neuroncore (0: a device plugin no
// longer serves there).
std::shared_ptr<const json> nodeObject(const std::string& type, const std::string& topology,
                                       int cores = 4) {
  json node = {
      {"metadata",
       {{"name", "new-size"},
        {"labels", {{"node.kubernetes.io/instance-type", type}, {"torus.dev/lnc", "2"}}}}}};
  if (!topology.empty()) node["metadata"]["annotations"][contracts::kTopologyAnnotation] = topology;
  node["status"]["allocatable"] = {{"cpu", "12"},
                                   {"aws.amazon.com/neuroncore", std::to_string(cores)}};
  return std::make_shared<const json>(std::move(node));
}

// What the agent on a trn2.3xlarge (one Trainium2 at LNC 2) writes.
constexpr const char* kOneChip =
    R"({"v":1,"instanceType":"trn2.3xlarge","lnc":2,"devices":1,"coresPerDevice":4,"links":[[]],"unhealthy":[]})";

TEST(UncataloguedNode, IsPlacedOnAsItsAgentReportsIt) {
  ClusterState state;
  ClusterMirror mirror(state);
  mirror.applyNodeList({nodeObject("trn2.3xlarge", kOneChip)});
  const auto node = state.node("new-size");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->model.catalog, nullptr);
  EXPECT_EQ(node->model.deviceCount(), 1);
  EXPECT_EQ(node->model.logicalCoreCount(), 4);

  const auto chip = state.tryPlace(
      "new-size", testing::testPod("a", topology::AllocationUnit::kDevice, 1, 0, "ml"), false);
  ASSERT_TRUE(chip.ok()) << chip.error().message;
  EXPECT_EQ(chip->ids.toRangeString(), "0");
  const auto cores = state.tryPlace(
      "new-size", testing::testPod("b", topology::AllocationUnit::kCore, 4, 0, "ml"), false);
  ASSERT_TRUE(cores.ok()) << cores.error().message;
  EXPECT_EQ(cores->ids.toRangeString(), "0-3");
  EXPECT_FALSE(state
                   .tryPlace("new-size",
                             testing::testPod("c", topology::AllocationUnit::kCore, 5, 0, "ml"),
                             false)
                   .ok());
}

TEST(UncataloguedNode, WithoutItsAgentsReportIsNoNeuronNode) {
  ClusterState state;
  ClusterMirror mirror(state);
  mirror.applyNodeList({nodeObject("trn2.3xlarge", kOneChip)});
  ASSERT_TRUE(state.hasNode("new-size"));
  // The agent is gone and its annotation with it (or never came: no label placed one).
  mirror.applyNodeList({nodeObject("trn2.3xlarge", "")});
  EXPECT_FALSE(state.hasNode("new-size"));
  // Its report stays on the Node after its agent was removed, but kubelet advertises nothing.
  mirror.applyNodeList({nodeObject("trn2.3xlarge", kOneChip)});
  ASSERT_TRUE(state.hasNode("new-size"));
  mirror.applyNodeList({nodeObject("trn2.3xlarge", kOneChip, 0)});
  EXPECT_FALSE(state.hasNode("new-size"));
  // A report of another type, or one that describes no devices, is not this node's.
  mirror.applyNodeList({nodeObject(
      "trn2.3xlarge",
      R"({"v":1,"instanceType":"trn2.48xlarge","lnc":2,"devices":16,"coresPerDevice":4,"unhealthy":[]})")});
  EXPECT_FALSE(state.hasNode("new-size"));
  mirror.applyNodeList({nodeObject(
      "trn2.3xlarge",
      R"({"v":1,"instanceType":"trn2.3xlarge","lnc":2,"devices":0,"coresPerDevice":0,"unhealthy":[]})")});
  EXPECT_FALSE(state.hasNode("new-size"));
}

TEST(UncataloguedNode, ANewCountOfDevicesDropsTheAllocationsMadeOnTheOldOne) {
  ClusterState state;
  ClusterMirror mirror(state);
  mirror.applyNodeList({nodeObject("trn2.3xlarge", kOneChip)});
  ASSERT_TRUE(state
                  .record("new-size",
                          testing::testPod("a", topology::AllocationUnit::kCore, 2, 0, "ml"),
                          *topology::CoreSet::parse("0-1"))
                  .ok());
  // Health changes keep them;
  mirror.applyNodeList({nodeObject(
      "trn2.3xlarge",
      R"({"v":1,"instanceType":"trn2.3xlarge","lnc":2,"devices":1,"coresPerDevice":4,"unhealthy":[0]})")});
  EXPECT_TRUE(state.allocationOf("a").has_value());
  // a node that now reports two chips is another shape.
  mirror.applyNodeList({nodeObject(
      "trn2.3xlarge",
      R"({"v":1,"instanceType":"trn2.3xlarge","lnc":2,"devices":2,"coresPerDevice":4,"unhealthy":[]})")});
  EXPECT_FALSE(state.allocationOf("a").has_value());
  EXPECT_EQ(state.node("new-size")->freeCores.toRangeString(), "0-7");
}

}  // namespace
}  // namespace torus::extender
