// KubeletReport: what the ListAndWatch streams last sent, as kubelet holds it — nothing until
// every resource has sent a list, each resource's Unhealthy ids after, everything Unhealthy once
// a resource's last stream has ended (kubelet marks it so), and a change notification only when
// what kubelet holds changed.
#include "device-plugin/kubelet_report.h"

#include <gtest/gtest.h>

namespace torus::plugin {
namespace {

topology::CoreSet ids(std::string_view text) {
  return *topology::CoreSet::parse(text);
}

TEST(KubeletReport, NothingUntilEveryResourceHasSentAList) {
  KubeletReport report({ResourceKind::kNeuronCore, ResourceKind::kNeuron});
  EXPECT_FALSE(report.current());
  EXPECT_FALSE(report.serving());
  report.streamOpened(ResourceKind::kNeuron);
  report.sent(ResourceKind::kNeuron, ids("0-15"), ids("3"));
  EXPECT_FALSE(report.current());
  EXPECT_FALSE(report.serving());
  report.streamOpened(ResourceKind::kNeuronCore);
  report.sent(ResourceKind::kNeuronCore, ids("0-63"), ids(""));
  ASSERT_TRUE(report.current());
  EXPECT_TRUE(report.serving());
  const contracts::KubeletUnavailable expected = {{"aws.amazon.com/neuron", ids("3")},
                                                  {"aws.amazon.com/neuroncore", ids("")}};
  EXPECT_EQ(*report.current(), expected);
}

TEST(KubeletReport, AnEndedStreamLeavesEveryIdUnhealthyUntilTheNextList) {
  KubeletReport report({ResourceKind::kNeuron});
  report.streamOpened(ResourceKind::kNeuron);
  report.sent(ResourceKind::kNeuron, ids("0-15"), ids("1"));
  // A second stream (kubelet re-registered us) ending leaves the first one serving.
  report.streamOpened(ResourceKind::kNeuron);
  report.streamClosed(ResourceKind::kNeuron);
  EXPECT_TRUE(report.serving());
  EXPECT_EQ(report.current()->at("aws.amazon.com/neuron"), ids("1"));
  report.streamClosed(ResourceKind::kNeuron);
  EXPECT_FALSE(report.serving());
  EXPECT_EQ(report.current()->at("aws.amazon.com/neuron"), ids("0-15"));
  // A new stream serves once it has sent its list.
  report.streamOpened(ResourceKind::kNeuron);
  EXPECT_FALSE(report.serving());
  report.sent(ResourceKind::kNeuron, ids("0-15"), ids(""));
  EXPECT_TRUE(report.serving());
  EXPECT_TRUE(report.current()->at("aws.amazon.com/neuron").empty());
}

TEST(KubeletReport, NotifiesOnlyWhenWhatKubeletHoldsChanged) {
  KubeletReport report({ResourceKind::kNeuron});
  int changes = 0;
  auto subscription = report.onChange([&] { ++changes; });
  report.streamOpened(ResourceKind::kNeuron);
  report.sent(ResourceKind::kNeuron, ids("0-15"), ids("1"));
  EXPECT_EQ(changes, 1);
  report.sent(ResourceKind::kNeuron, ids("0-15"), ids("1"));
  EXPECT_EQ(changes, 1);
  report.sent(ResourceKind::kNeuron, ids("0-15"), ids(""));
  EXPECT_EQ(changes, 2);
  report.streamClosed(ResourceKind::kNeuron);
  EXPECT_EQ(changes, 3);
}

}  // namespace
}  // namespace torus::plugin
