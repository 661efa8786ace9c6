// The names other software depends on, held to one another across the components that write and
// read them: the plugin's resources are what the extender counts, the agent's Node metadata is
// what the extender reads back, and a container gets one environment whoever placed it.
#include "common/contracts/neuron_names.h"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/contracts/container_env.h"
#include "common/topology/node.h"
#include "device-plugin/allocation.h"
#include "device-plugin/resource_kind.h"
#include "node-runtime/agent/rules/node_metadata.h"
#include "scheduler-extender/kube/kube_objects.h"
#include "scheduler-extender/server/extender_json.h"

namespace torus::contracts {
namespace {

using nlohmann::json;

json podAsking(std::string_view resource, int count) {
  return {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "u1"}}},
          {"spec",
           {{"containers",
             json::array({{{"name", "main"},
                           {"resources", {{"limits", {{std::string(resource), count}}}}}}})}}}};
}

TEST(ResourceNames, EveryPluginResourceIsOneTheExtenderCountsInTheSameUnit) {
  for (const plugin::ResourceKind kind :
       {plugin::ResourceKind::kNeuronCore, plugin::ResourceKind::kNeuron,
        plugin::ResourceKind::kNeuronDevice}) {
    const std::string_view name = plugin::resourceName(kind);
    SCOPED_TRACE(std::string(name));
    EXPECT_NE(std::find(kResourceNames.begin(), kResourceNames.end(), name), kResourceNames.end());
    auto parsed = plugin::parseResourceList(name);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(*parsed, std::vector<plugin::ResourceKind>{kind});
    auto shortName = plugin::parseResourceList(name.substr(kResourcePrefix.size()));
    ASSERT_TRUE(shortName.ok()) << shortName.error().message;
    EXPECT_EQ(*shortName, std::vector<plugin::ResourceKind>{kind});

    auto demand = extender::parsePodObject(podAsking(name, 2));
    ASSERT_TRUE(demand.ok()) << demand.error().message;
    EXPECT_EQ(demand->resourceName, name);
    EXPECT_EQ(demand->count, 2);
    EXPECT_EQ(demand->unit, plugin::unitOf(kind));
  }
}

TEST(ResourceNames, AnUnknownResourceIsNamedInTheError) {
  auto parsed = plugin::parseResourceList("neuroncore,gpu");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message.find("\"gpu\""), std::string::npos);
}

// The agent publishes a node with LNC 1, a sick chip and a NeuronLink down; the extender's reader
// gets back the same LNC, the same unhealthy chip and the same links.
TEST(NodeMetadata, WhatTheAgentPublishesIsWhatTheExtenderReads) {
  topology::Node discovered = *topology::catalogNode("trn2.48xlarge", 1);
  discovered.devices[3].health = topology::DeviceHealth::unhealthy(
      topology::HealthDimension::kEccUncorrected, "mem", "uncorrected ECC");
  std::erase(discovered.devices[4].connected, 5);
  std::erase(discovered.devices[5].connected, 4);

  const agent::NodeMetadata metadata = agent::nodeMetadata(discovered);
  EXPECT_EQ(metadata.labels.at(kLncLabel), "1");
  EXPECT_EQ(metadata.labels.at(kTorusInstanceTypeLabel), "trn2.48xlarge");
  EXPECT_EQ(metadata.labels.at(kDeviceCountLabel), "16");
  EXPECT_EQ(metadata.labels.at(kHealthyDevicesLabel), "15");
  for (const auto& [key, value] : metadata.labels)
    EXPECT_TRUE(agent::ownedLabel(key)) << key;
  EXPECT_FALSE(agent::ownedLabel(kNeuronModeLabel));
  EXPECT_FALSE(agent::ownedLabel(kCoreDevicesLabel)) << "the operator's, the agent never drops it";
  EXPECT_FALSE(agent::ownedLabel(kNeuronNodeLabel)) << "the chart places the agent by it";

  json labels(metadata.labels);
  labels[kInstanceTypeLabel] = "trn2.48xlarge";  // kubelet's
  const json nodeObject = {
      {"metadata", {{"name", "n1"}, {"labels", labels}, {"annotations", metadata.annotations}}}};
  auto record = extender::parseNodeRecord(nodeObject);
  ASSERT_TRUE(record.ok()) << record.error().message;
  EXPECT_EQ(record->instanceType, "trn2.48xlarge");
  EXPECT_EQ(record->lnc, 1);
  EXPECT_EQ(record->unhealthy.toRangeString(), "3");
  ASSERT_TRUE(record->topology.has_value()) << record->topologyProblem;
  auto read = contracts::nodeFromTopology(*record->topology);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->lnc, 1);
  ASSERT_EQ(read->devices.size(), discovered.devices.size());
  for (std::size_t device = 0; device < discovered.devices.size(); ++device) {
    EXPECT_EQ(read->devices[device].connected, discovered.devices[device].connected) << device;
    EXPECT_EQ(read->devices[device].health.healthy, discovered.devices[device].health.healthy);
  }
}

TEST(ContainerEnv, VisibleCoresAlwaysAndTheLncWhereTheChipHasAChoice) {
  const topology::Node trn2 = *topology::catalogNode("trn2.48xlarge");
  EXPECT_EQ(neuronContainerEnv(trn2, *topology::CoreSet::parse("8-11"), 2),
            (std::vector<EnvironmentVariable>{{"NEURON_RT_VISIBLE_CORES", "8-11"},
                                              {"NEURON_LOGICAL_NC_CONFIG", "2"}}));
  const topology::Node inf2 = *topology::catalogNode("inf2.48xlarge");
  EXPECT_EQ(neuronContainerEnv(inf2, *topology::CoreSet::parse("0,2"), inf2.lnc),
            (std::vector<EnvironmentVariable>{{"NEURON_RT_VISIBLE_CORES", "0,2"}}));
  // A type the catalog lacks: the runtime is told the LNC the ids are counted in, whatever it is.
  topology::Node unknown = trn2;
  unknown.instanceType = "trn2.3xlarge";
  unknown.catalog = nullptr;
  for (const int lnc : {1, 2}) {
    unknown.lnc = lnc;
    EXPECT_EQ(
        neuronContainerEnv(unknown, *topology::CoreSet::parse("0"), lnc),
        (std::vector<EnvironmentVariable>{{"NEURON_RT_VISIBLE_CORES", "0"},
                                          {"NEURON_LOGICAL_NC_CONFIG", std::to_string(lnc)}}));
  }
  // No UltraServer position: the mode asked for adds nothing.
  EXPECT_EQ(neuronContainerEnv(trn2, *topology::CoreSet::parse("0"), 2, 4).size(), 2u);
}

// NEURON_RT_ULTRASERVER_MODE carries the driver's mode code (X4=1, X2H=2, X2V=3, X1=4), as AWS's
// UltraServer init script writes it, never the node count.
TEST(ContainerEnv, AnUltraServerNodeGetsTheModeCodeAndIdsOfTheSizeAskedFor) {
  topology::Node node = *topology::catalogNode("trn2.48xlarge");
  node.ultraServer = topology::UltraServerPosition{};
  node.ultraServer->serverId2 = "00000000000000aa";
  node.ultraServer->serverId4 = "00000000000000bb";
  node.ultraServer->nodeId2 = 1;
  node.ultraServer->nodeId4 = 3;
  node.ultraServer->supportedModes = {1, 3, 4};  // after a 4-node election
  const auto cores = *topology::CoreSet::parse("0-63");
  const auto four = neuronContainerEnv(node, cores, 2, 4);
  ASSERT_EQ(four.size(), 5u);
  EXPECT_EQ(four[2], (EnvironmentVariable{"NEURON_RT_ULTRASERVER_MODE", "1"}));
  EXPECT_EQ(four[3], (EnvironmentVariable{"NEURON_RT_ULTRASERVER_SERVER_ID", "00000000000000bb"}));
  EXPECT_EQ(four[4], (EnvironmentVariable{"NEURON_RT_ULTRASERVER_NODE_ID", "3"}));
  const auto two = neuronContainerEnv(node, cores, 2, 2);
  EXPECT_EQ(two[2].second, "3");  // X2V: the pair over the vertical links
  EXPECT_EQ(two[3].second, "00000000000000aa");
  EXPECT_EQ(two[4].second, "1");
  const auto one = neuronContainerEnv(node, cores, 2, 1);
  EXPECT_EQ(one[2].second, "4");  // X1
  EXPECT_EQ(one[3].second, "0000000000000000");
  EXPECT_EQ(one[4].second, "-1");
  // After a 2-node election over the horizontal links the driver offers X2H, not X2V.
  node.ultraServer->supportedModes = {2, 4};
  EXPECT_EQ(neuronContainerEnv(node, cores, 2, 2)[2].second, "2");
}

// Both placers hand a container the same variables for the same cores.
TEST(ContainerEnv, ThePluginsAllocateGivesTheSharedEnvironment) {
  const topology::Node trn2 = *topology::catalogNode("trn2.48xlarge");
  auto allocation =
      plugin::allocateContainer(plugin::ResourceKind::kNeuron, trn2, "/dev",
                                topology::CoreSet::fromIds(std::vector<int>{4, 5}), {});
  ASSERT_TRUE(allocation.ok()) << allocation.error().message;
  std::map<std::string, std::string> shared;
  for (const auto& [name, value] : neuronContainerEnv(trn2, allocation->cores, trn2.lnc)) {
    shared[name] = value;
  }
  EXPECT_EQ(allocation->env, shared);
  EXPECT_EQ(allocation->env.at(std::string(kVisibleCoresEnv)), "16-23");
}

}  // namespace
}  // namespace torus::contracts
