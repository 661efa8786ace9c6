#include "common/contracts/neuron_handoff.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace torus::contracts {
namespace {

nlohmann::json podWith(const nlohmann::json& annotations) {
  return {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"annotations", annotations}}}};
}

// What the extender's bind writes is what the plugin and the extender's informer read back.
TEST(NeuronHandoff, WhatABindWritesReadsBack) {
  for (const std::string type : {"aws.amazon.com/neuroncore", "aws.amazon.com/neuron", ""}) {
    const Handoff written{*topology::CoreSet::parse("8-11"), 1700000000000000002, false, type, {}};
    const nlohmann::json annotations = handoffAnnotations(written);
    EXPECT_EQ(annotations["AWS_NEURON_IDS"], "8,9,10,11");
    EXPECT_EQ(annotations["NEURON_ALLOCATED"], "false");
    EXPECT_EQ(annotations.contains("NEURON_RESOURCE_TYPE"), !type.empty());
    auto read = handoffOf(podWith(annotations));
    ASSERT_TRUE(read.ok()) << read.error().message;
    ASSERT_TRUE(read->has_value());
    EXPECT_EQ((*read)->ids, written.ids);
    EXPECT_EQ((*read)->allocTimeNs, written.allocTimeNs);
    EXPECT_EQ((*read)->allocated, written.allocated);
    EXPECT_EQ((*read)->resourceType, written.resourceType);
  }
}

TEST(NeuronHandoff, AnUltraServerGangsNodeCountReadsBack) {
  Handoff written{*topology::CoreSet::parse("0-15"), 1700000000000000002, false, "", {}};
  EXPECT_FALSE(handoffAnnotations(written).contains("torus.dev/ultraserver-nodes"));
  for (int nodes : {1, 2, 4}) {
    written.ultraServerNodes = nodes;
    const nlohmann::json annotations = handoffAnnotations(written);
    EXPECT_EQ(annotations["torus.dev/ultraserver-nodes"], std::to_string(nodes));
    auto read = handoffOf(podWith(annotations));
    ASSERT_TRUE(read.ok() && read->has_value());
    EXPECT_EQ((*read)->ultraServerNodes, nodes);
  }
  auto bad = handoffOf(podWith({{"AWS_NEURON_IDS", "0-15"}, {"torus.dev/ultraserver-nodes", "3"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "annotation torus.dev/ultraserver-nodes=\"3\" is not 1, 2 or 4");
}

TEST(NeuronHandoff, AbsentIsNothingAndUnreadableIsNamed) {
  auto none = handoffOf(podWith({{"other", "x"}}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(handoffOf(nlohmann::json::array()).valueOr(std::nullopt).has_value());
  auto bad = handoffOf(podWith({{"AWS_NEURON_IDS", "eight"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "annotation AWS_NEURON_IDS=\"eight\" is not a list of ids");
  // AWS's plugin marks it allocated; a time that is not a number reads as 0.
  auto marked = handoffOf(podWith(
      {{"AWS_NEURON_IDS", "0,1"}, {"NEURON_ALLOCATED", "true"}, {"NEURON_ALLOC_TIME", "soon"}}));
  ASSERT_TRUE(marked.ok() && marked->has_value());
  EXPECT_TRUE((*marked)->allocated);
  EXPECT_EQ((*marked)->allocTimeNs, 0);
}

}  // namespace
}  // namespace torus::contracts
