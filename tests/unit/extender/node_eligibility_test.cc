#include "scheduler-extender/state/node_eligibility.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace torus::extender {
namespace {

using nlohmann::json;

NodeFacts node(const char* text) {
  return parseNodeFacts(json::parse(text));
}
PodNodeRules pod(const char* spec) {
  return parsePodNodeRules(json{{"spec", json::parse(spec)}});
}

const char* kTaintedTrn2 = R"({"metadata":{"name":"trn-a","labels":{
    "node.kubernetes.io/instance-type":"trn2.48xlarge","zone-rank":"7"}},
  "spec":{"taints":[{"key":"aws.amazon.com/neuron","value":"true","effect":"NoSchedule"},
                    {"key":"soft","effect":"PreferNoSchedule"}]}})";

TEST(NodeEligibility, TaintsKeepOutPodsThatDoNotTolerateThem) {
  const NodeFacts trn = node(kTaintedTrn2);
  EXPECT_FALSE(nodeAdmits(trn, pod("{}")));
  EXPECT_TRUE(nodeAdmits(
      trn, pod(R"({"tolerations":[{"key":"aws.amazon.com/neuron","operator":"Exists"}]})")));
  EXPECT_TRUE(nodeAdmits(trn, pod(R"({"tolerations":[{"key":"aws.amazon.com/neuron",
      "operator":"Equal","value":"true","effect":"NoSchedule"}]})")));
  EXPECT_FALSE(nodeAdmits(trn, pod(R"({"tolerations":[{"key":"aws.amazon.com/neuron",
      "value":"false"}]})")));
  EXPECT_FALSE(nodeAdmits(trn, pod(R"({"tolerations":[{"key":"aws.amazon.com/neuron",
      "operator":"Exists","effect":"NoExecute"}]})")));
  // An empty key with Exists tolerates every taint.
  EXPECT_TRUE(nodeAdmits(trn, pod(R"({"tolerations":[{"operator":"Exists"}]})")));
}

TEST(NodeEligibility, CordonedNodesTakeOnlyPodsToleratingIt) {
  const NodeFacts cordoned = node(R"({"metadata":{"name":"n"},"spec":{"unschedulable":true}})");
  EXPECT_FALSE(nodeAdmits(cordoned, pod("{}")));
  EXPECT_TRUE(nodeAdmits(cordoned, pod(R"({"tolerations":[{"key":
      "node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"}]})")));
}

TEST(NodeEligibility, NodeSelectorAndRequiredAffinity) {
  const NodeFacts trn = node(kTaintedTrn2);
  const char* tolerate = R"("tolerations":[{"operator":"Exists"}])";
  const auto with = [&](const std::string& rest) {
    return parsePodNodeRules(json{{"spec", json::parse("{" + std::string(tolerate) + rest + "}")}});
  };
  EXPECT_TRUE(nodeAdmits(
      trn, with(R"(,"nodeSelector":{"node.kubernetes.io/instance-type":"trn2.48xlarge"})")));
  EXPECT_FALSE(nodeAdmits(
      trn, with(R"(,"nodeSelector":{"node.kubernetes.io/instance-type":"inf2.48xlarge"})")));
  const auto affinity = [&](const std::string& terms) {
    return with(R"(,"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms":)" +
                terms + "}}}");
  };
  EXPECT_TRUE(
      nodeAdmits(trn, affinity(R"([{"matchExpressions":[{"key":"node.kubernetes.io/instance-type",
      "operator":"In","values":["trn1.32xlarge","trn2.48xlarge"]}]}])")));
  EXPECT_FALSE(nodeAdmits(trn, affinity(R"([{"matchExpressions":[{"key":"zone-rank","operator":"Gt",
      "values":["7"]}]}])")));
  EXPECT_TRUE(nodeAdmits(trn, affinity(R"([{"matchExpressions":[{"key":"zone-rank","operator":"Lt",
      "values":["8"]}]}])")));
  // Terms are ORed; requirements inside one are ANDed.
  EXPECT_TRUE(nodeAdmits(trn, affinity(R"([{"matchExpressions":[{"key":"gpu","operator":"Exists"}]},
      {"matchFields":[{"key":"metadata.name","operator":"In","values":["trn-a"]}]}])")));
  EXPECT_FALSE(
      nodeAdmits(trn, affinity(R"([{"matchExpressions":[{"key":"gpu","operator":"DoesNotExist"},
      {"key":"zone-rank","operator":"NotIn","values":["7"]}]}])")));
  // A term with nothing in it, or an operator nobody knows, matches no node.
  EXPECT_FALSE(nodeAdmits(trn, affinity(R"([{}])")));
  EXPECT_FALSE(nodeAdmits(
      trn, affinity(R"([{"matchExpressions":[{"key":"zone-rank","operator":"Near"}]}])")));
}

TEST(NodeEligibility, MalformedFieldsReadAsAbsentAndNeverThrow) {
  EXPECT_NO_THROW(node(R"({"metadata":7,"spec":{"taints":"x","unschedulable":"yes"}})"));
  EXPECT_FALSE(node(R"({"metadata":{"name":"n"},"spec":{"unschedulable":"yes"}})").unschedulable);
  const PodNodeRules rules = pod(R"({"tolerations":[5,{"key":3}],"nodeSelector":[],
      "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":5}}}})");
  EXPECT_TRUE(rules.hasRequiredAffinity);
  EXPECT_FALSE(nodeAdmits(node(R"({"metadata":{"name":"n"}})"), rules));
}

}  // namespace
}  // namespace torus::extender
