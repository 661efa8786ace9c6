// What `neuron-node-agent forget-nodes` removes from a Node on uninstall: exactly the agent's own
// labels, annotation and condition, never anybody else's.
#include "node-runtime/agent/kube/forget_nodes.h"

#include <gtest/gtest.h>

namespace torus::agent {
namespace {

using nlohmann::json;

TEST(ForgetNodes, RemovesOnlyTheAgentsKeys) {
  const json node = json::parse(R"({
    "metadata": {
      "name": "trn-1",
      "labels": {"torus.dev/lnc": "2", "torus.dev/healthy-devices": "16",
                 "neuron.amazonaws.com/ultraserver-node-id-4": "3",
                 "node.kubernetes.io/instance-type": "trn2.48xlarge", "team": "ml"},
      "annotations": {"torus.dev/topology": "{}", "node.alpha.kubernetes.io/ttl": "0"}
    }
  })");
  EXPECT_EQ(forgetMetadataPatch(node), json::parse(R"({
    "metadata": {
      "labels": {"torus.dev/lnc": null, "torus.dev/healthy-devices": null,
                 "neuron.amazonaws.com/ultraserver-node-id-4": null},
      "annotations": {"torus.dev/topology": null}
    }
  })"));
}

TEST(ForgetNodes, ANodeWithoutTheAgentsKeysNeedsNoPatch) {
  EXPECT_TRUE(forgetMetadataPatch(json::parse(R"({"metadata": {"name": "cpu-1",
      "labels": {"kubernetes.io/os": "linux"}}})"))
                  .is_null());
  EXPECT_TRUE(forgetMetadataPatch(json::parse(R"({"metadata": {"name": "bare"}})")).is_null());
  EXPECT_TRUE(
      forgetMetadataPatch(json::parse(R"({"metadata": {"labels": "not a map"}})")).is_null());
  EXPECT_TRUE(forgetMetadataPatch(json::parse("[]")).is_null());
}

TEST(ForgetNodes, FindsTheNeuronHealthyConditionAmongOthers) {
  EXPECT_TRUE(hasNeuronCondition(json::parse(R"({"status": {"conditions": [
      {"type": "Ready", "status": "True"}, {"type": "NeuronHealthy", "status": "False"}]}})")));
  EXPECT_FALSE(hasNeuronCondition(json::parse(R"({"status": {"conditions": [
      {"type": "Ready", "status": "True"}]}})")));
  EXPECT_FALSE(hasNeuronCondition(json::parse(R"({"status": {"conditions": {"type": "x"}}})")));
  EXPECT_FALSE(hasNeuronCondition(json::parse(R"({"status": "gone"})")));
}

}  // namespace
}  // namespace torus::agent
