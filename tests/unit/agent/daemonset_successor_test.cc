#include "node-runtime/agent/kube/daemonset_successor.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace torus::agent {
namespace {

using nlohmann::json;

// The chart's device-plugin DaemonSet, as helm renders it with dra.enabled.
json chartDaemonSet(json extraSelector = json::object()) {
  return {{"spec",
           {{"template",
             {{"spec",
               {{"nodeSelector", std::move(extraSelector)},
                {"affinity",
                 {{"nodeAffinity",
                   {{"requiredDuringSchedulingIgnoredDuringExecution",
                     {{"nodeSelectorTerms",
                       json::array({{{"matchExpressions",
                                      json::array({{{"key", "node.kubernetes.io/instance-type"},
                                                    {"operator", "In"},
                                                    {"values", {"trn2.48xlarge", "inf2.xlarge"}}},
                                                   {{"key", "eks.amazonaws.com/compute-type"},
                                                    {"operator", "NotIn"},
                                                    {"values", {"fargate", "hybrid", "auto"}}},
                                                   {{"key", "torus.dev/neuron-mode"},
                                                    {"operator", "NotIn"},
                                                    {"values", {"dra"}}}})}}})}}}}}}}}}}}}}};
}

json node(json labels) {
  return {{"metadata", {{"name", "node-a"}, {"labels", std::move(labels)}}}};
}

TEST(DaemonSetSuccessor, TheChartsAffinitySelectsItsInstanceTypesInPluginMode) {
  EXPECT_TRUE(*templateSelectsNode(chartDaemonSet(),
                                   node({{"node.kubernetes.io/instance-type", "trn2.48xlarge"}})));
  // Narrowed instance types, a node moved to DRA, a nodeSelector the node lacks: no successor.
  EXPECT_FALSE(*templateSelectsNode(chartDaemonSet(),
                                    node({{"node.kubernetes.io/instance-type", "trn1.32xlarge"}})));
  EXPECT_FALSE(*templateSelectsNode(chartDaemonSet(),
                                    node({{"node.kubernetes.io/instance-type", "trn2.48xlarge"},
                                          {"torus.dev/neuron-mode", "dra"}})));
  EXPECT_FALSE(*templateSelectsNode(chartDaemonSet({{"pool", "training"}}),
                                    node({{"node.kubernetes.io/instance-type", "trn2.48xlarge"}})));
  EXPECT_TRUE(*templateSelectsNode(
      chartDaemonSet({{"pool", "training"}}),
      node({{"node.kubernetes.io/instance-type", "trn2.48xlarge"}, {"pool", "training"}})));
}

TEST(DaemonSetSuccessor, TermsAreOredAndEveryOperatorReadsAsTheSchedulerDoes) {
  const auto selects = [](json terms, json labels) {
    json daemonSet = {{"spec",
                       {{"template",
                         {{"spec",
                           {{"affinity",
                             {{"nodeAffinity",
                               {{"requiredDuringSchedulingIgnoredDuringExecution",
                                 {{"nodeSelectorTerms", std::move(terms)}}}}}}}}}}}}}};
    return templateSelectsNode(daemonSet, node(std::move(labels)));
  };
  const json gpus = {{"key", "gpus"}, {"operator", "Gt"}, {"values", {"3"}}};
  const json zone = {{"key", "zone"}, {"operator", "Exists"}};
  const json byName = {{"key", "metadata.name"}, {"operator", "In"}, {"values", {"node-a"}}};
  EXPECT_TRUE(*selects(json::array({{{"matchExpressions", {gpus}}}}), {{"gpus", "4"}}));
  EXPECT_FALSE(*selects(json::array({{{"matchExpressions", {gpus}}}}), {{"gpus", "3"}}));
  EXPECT_FALSE(*selects(json::array({{{"matchExpressions", {gpus, zone}}}}), {{"gpus", "4"}}));
  EXPECT_TRUE(
      *selects(json::array({{{"matchExpressions", {gpus}}}, {{"matchExpressions", {zone}}}}),
               {{"zone", "a"}}));
  EXPECT_TRUE(*selects(json::array({{{"matchFields", {byName}}}}), json::object()));
  EXPECT_FALSE(*selects(json::array({json::object()}), {{"zone", "a"}})) << "an empty term";
  const auto typo =
      selects(json::array({{{"matchExpressions", {{{"key", "zone"}, {"operator", "Inn"}}}}}}), {});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("matchExpressions[0]: unknown operator \"Inn\""),
            std::string::npos)
      << typo.error().message;
}

TEST(DaemonSetSuccessor, NoAffinityAndNoSelectorRunEverywhere) {
  EXPECT_TRUE(*templateSelectsNode(json::object(), node({{"any", "label"}})));
  EXPECT_TRUE(*templateSelectsNode({{"spec", "not a map"}}, node(json::object())));
}

}  // namespace
}  // namespace torus::agent
