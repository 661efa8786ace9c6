// Which nodes the chart's node-agent DaemonSets run on: every Neuron node, whether its instance
// type is in neuronInstanceTypes or it carries one of neuronNodeLabels, never a Fargate, hybrid
// or Auto Mode node, and with dra.enabled exactly one of the two agents per node. The rendered
// DaemonSets are judged by the agent's own reading of a pod template's node affinity
// (templateSelectsNode: terms ORed, expressions ANDed, as kube-scheduler reads them).
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "node-runtime/agent/kube/daemonset_successor.h"
#include "tests/integration/helm/chart_render.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using nlohmann::json;
using Labels = std::map<std::string, std::string>;

// yaml-cpp's tree as JSON; every scalar a string, which is all a selector compares.
json toJson(const YAML::Node& node) {
  if (node.IsMap()) {
    json object = json::object();
    for (const auto& entry : node)
      object[entry.first.as<std::string>()] = toJson(entry.second);
    return object;
  }
  if (node.IsSequence()) {
    json list = json::array();
    for (const YAML::Node& item : node)
      list.push_back(toJson(item));
    return list;
  }
  if (node.IsScalar()) return node.as<std::string>();
  return nullptr;
}

std::map<std::string, json> agentDaemonSets(const Variant& variant) {
  std::map<std::string, json> found;
  for (const YAML::Node& object : objectsOfKind(render(variant), "DaemonSet")) {
    found[object["metadata"]["name"].as<std::string>()] = toJson(object);
  }
  return found;
}

// The names of the DaemonSets that would run a pod on a node with these labels.
std::vector<std::string> agentsOn(const std::map<std::string, json>& daemonSets,
                                  const Labels& labels) {
  const json node = {{"metadata", {{"name", "node-1"}, {"labels", labels}}}};
  std::vector<std::string> names;
  for (const auto& [name, daemonSet] : daemonSets) {
    auto selects = agent::templateSelectsNode(daemonSet, node);
    EXPECT_TRUE(selects.ok()) << name << ": " << selects.error().message;
    if (selects.ok() && *selects) names.push_back(name);
  }
  return names;
}

const std::string kPlugin = "torus-torus-node-agent";
const std::string kDra = "torus-torus-node-agent-dra";
const std::string kNfdNeuron = "feature.node.kubernetes.io/pci-0880_1d0f.present";

struct NodeCase {
  const char* description;
  Labels labels;
  bool neuron;  // runs exactly one agent; else none
};

// Instance types no release lists yet, marked only by a label; and nodes that must get none.
const std::vector<NodeCase> kNodes = {
    {"a listed type", {{"node.kubernetes.io/instance-type", "trn2.48xlarge"}}, true},
    {"an unlisted type labelled by node-feature-discovery",
     {{"node.kubernetes.io/instance-type", "trn3.48xlarge"}, {kNfdNeuron, "true"}},
     true},
    {"an unlisted type labelled by its node group",
     {{"node.kubernetes.io/instance-type", "trn2.3xlarge"}, {"torus.dev/neuron", "true"}},
     true},
    {"an unlisted type launched by Karpenter",
     {{"node.kubernetes.io/instance-type", "inf3.xlarge"},
      {"karpenter.k8s.aws/instance-accelerator-manufacturer", "aws"}},
     true},
    {"a GPU node launched by Karpenter",
     {{"node.kubernetes.io/instance-type", "p5.48xlarge"},
      {"karpenter.k8s.aws/instance-accelerator-manufacturer", "nvidia"}},
     false},
    {"any EC2 node: Amazon's VGA device is no Neuron device",
     {{"node.kubernetes.io/instance-type", "m5.large"},
      {"feature.node.kubernetes.io/pci-0300_1d0f.present", "true"}},
     false},
    {"our label set to false", {{"torus.dev/neuron", "false"}}, false},
    {"a Fargate node with every mark",
     {{"node.kubernetes.io/instance-type", "trn2.48xlarge"},
      {"eks.amazonaws.com/compute-type", "fargate"},
      {"torus.dev/neuron", "true"},
      {kNfdNeuron, "true"}},
     false},
    {"a hybrid node labelled Neuron",
     {{"eks.amazonaws.com/compute-type", "hybrid"}, {"torus.dev/neuron", "true"}},
     false},
    {"an Auto Mode node found by node-feature-discovery",
     {{"eks.amazonaws.com/compute-type", "auto"}, {kNfdNeuron, "true"}},
     false},
    {"no label at all", {}, false},
};

TEST(HelmChartPlacement, EveryNeuronNodeRunsTheDevicePluginAgentWhateverItsType) {
  const auto daemonSets = agentDaemonSets({"defaults", {}});
  ASSERT_EQ(daemonSets.size(), 1U);
  for (const NodeCase& node : kNodes) {
    EXPECT_EQ(agentsOn(daemonSets, node.labels),
              node.neuron ? std::vector<std::string>{kPlugin} : std::vector<std::string>{})
        << node.description;
  }
}

// Each node, labelled for DRA or not, runs exactly one of the two agents, whichever way it is
// known as a Neuron node; a node that is not one runs neither.
TEST(HelmChartPlacement, WithDraEveryNeuronNodeRunsExactlyOneAgent) {
  const auto daemonSets = agentDaemonSets({"dra", {"dra.enabled=true"}});
  ASSERT_EQ(daemonSets.size(), 2U);
  for (const NodeCase& node : kNodes) {
    Labels dra = node.labels;
    dra["torus.dev/neuron-mode"] = "dra";
    EXPECT_EQ(agentsOn(daemonSets, node.labels),
              node.neuron ? std::vector<std::string>{kPlugin} : std::vector<std::string>{})
        << node.description;
    EXPECT_EQ(agentsOn(daemonSets, dra),
              node.neuron ? std::vector<std::string>{kDra} : std::vector<std::string>{})
        << node.description << ", labelled for DRA";
  }
  const auto everywhere = agentDaemonSets({"dra", {"dra.enabled=true", "dra.allNodes=true"}});
  for (const NodeCase& node : kNodes) {
    EXPECT_EQ(agentsOn(everywhere, node.labels).size(), node.neuron ? 1U : 0U)
        << node.description << ", DRA on every node";
  }
}

TEST(HelmChartPlacement, TheLabelsAreTheOperatorsToChange) {
  const Labels nfdOnly = {{"node.kubernetes.io/instance-type", "trn3.48xlarge"},
                          {kNfdNeuron, "true"}};
  EXPECT_TRUE(
      agentsOn(agentDaemonSets({"by type alone", {"neuronNodeLabels=null"}}), nfdOnly).empty());
  const auto own = agentDaemonSets({"a label of one's own",
                                    {"neuronNodeLabels[0].key=example.com/accelerator",
                                     "neuronNodeLabels[0].values={neuron,trainium}"}});
  EXPECT_TRUE(agentsOn(own, nfdOnly).empty());
  EXPECT_EQ(agentsOn(own, {{"example.com/accelerator", "trainium"}}),
            std::vector<std::string>{kPlugin});
  EXPECT_EQ(agentsOn(own, {{"node.kubernetes.io/instance-type", "inf2.xlarge"}}),
            std::vector<std::string>{kPlugin})
      << "the listed types still count";

  const ProcessResult noValues = runProcess({TORUS_HELM, "lint", "--strict", kChart, "--set",
                                             "neuronNodeLabels[0].key=example.com/accelerator"});
  EXPECT_NE(noValues.exitCode, 0) << "the schema must refuse a label without values";
}

}  // namespace
}  // namespace torus::testing
