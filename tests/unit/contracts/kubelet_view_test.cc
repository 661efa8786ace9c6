// The agent -> extender report of what kubelet holds Unhealthy: what the agent writes, the
// extender reads back as the same refusal, and a report that is not ours is refused by name.
#include "common/contracts/kubelet_view.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scheduler-extender/kube/kube_objects.h"

namespace torus::contracts {
namespace {

topology::CoreSet ids(std::string_view text) {
  return *topology::CoreSet::parse(text);
}

TEST(KubeletView, WhatTheAgentWritesTheExtenderReadsBack) {
  const KubeletUnavailable written = {{"aws.amazon.com/neuron", ids("0-1")},
                                      {"aws.amazon.com/neuroncore", ids("40-43")}};
  const std::string text = renderKubeletUnavailable(written);
  EXPECT_EQ(text, R"({"aws.amazon.com/neuron":"0-1","aws.amazon.com/neuroncore":"40-43"})");
  auto read = parseKubeletUnavailable(text);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(*read, written);

  const nlohmann::json node = {
      {"metadata",
       {{"name", "n"},
        {"labels", {{"node.kubernetes.io/instance-type", "trn2.48xlarge"}}},
        {"annotations", {{kKubeletUnavailableAnnotation, text}}}}}};
  auto record = extender::parseNodeRecord(node);
  ASSERT_TRUE(record.ok()) << record.error().message;
  EXPECT_EQ(record->kubeletRefuses.devices, ids("0-1"));
  EXPECT_EQ(record->kubeletRefuses.cores, ids("40-43"));
  EXPECT_FALSE(record->kubeletRefuses.everything);
  EXPECT_TRUE(record->kubeletViewProblem.empty());
}

TEST(KubeletView, NothingUnhealthyIsAnEmptyRange) {
  auto read = parseKubeletUnavailable(R"({"aws.amazon.com/neuron":""})");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_TRUE(read->at("aws.amazon.com/neuron").empty());
}

TEST(KubeletView, AReportThatIsNotOursIsRefusedByName) {
  const std::pair<const char*, const char*> cases[] = {
      {"[1]", "not a JSON object"},
      {"{", "not a JSON object"},
      {R"({"nvidia.com/gpu":"0"})", "\"nvidia.com/gpu\" is not a Neuron resource"},
      {R"({"aws.amazon.com/neuron":3})", "the ids of aws.amazon.com/neuron are not a string"},
      {R"({"aws.amazon.com/neuron":"3-1"})", "aws.amazon.com/neuron: "},
  };
  for (const auto& [text, why] : cases) {
    auto read = parseKubeletUnavailable(text);
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_NE(read.error().message.find(why), std::string::npos) << read.error().message;
    EXPECT_NE(read.error().message.find(kKubeletUnavailableAnnotation), std::string::npos);
  }
  // On a node, an unreadable report offers nothing there rather than risk a refused pod.
  const nlohmann::json node = {
      {"metadata", {{"name", "n"}, {"annotations", {{kKubeletUnavailableAnnotation, "garbage"}}}}}};
  auto record = extender::parseNodeRecord(node);
  ASSERT_TRUE(record.ok());
  EXPECT_TRUE(record->kubeletRefuses.everything);
  EXPECT_FALSE(record->kubeletViewProblem.empty());
}

}  // namespace
}  // namespace torus::contracts
