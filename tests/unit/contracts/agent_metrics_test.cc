// The agent's /metrics as `kubectl neuron top` reads them: one node's figures rendered by the
// agent's writers and read back by the CLI's. A family or label renamed on one side only loses a
// figure here.
#include "common/contracts/agent_metrics.h"

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/metrics/event_counters.h"
#include "common/metrics/latency_histograms.h"
#include "common/metrics/prometheus_parse.h"
#include "kubectl-neuron/neuron_top.h"
#include "node-runtime/metrics/agent_metrics.h"
#include "node-runtime/metrics/deep_check_metrics.h"

namespace torus::contracts {
namespace {

using nlohmann::json;

constexpr double kDeepCheckAt = 1'800'000'000;

// trn2.48xlarge at LNC 2: logical core 4 is device 1's physical cores 0 and 1.
std::string agentMetrics() {
  auto node = topology::catalogNode("trn2.48xlarge", 2);
  EXPECT_TRUE(node.ok()) << node.error().message;
  node->devices[3].health = topology::DeviceHealth::unhealthy(
      topology::HealthDimension::kEccUncorrected, "mem", "uncorrected ECC errors");
  metrics::NodeStats stats;
  stats.devices.resize(node->devices.size());
  for (metrics::DeviceStats& device : stats.devices)
    device.cores.resize(8);
  metrics::DeviceStats& one = stats.devices[1];
  one.ecc = {{"mem_ecc_uncorrected", 3}, {"mem_ecc_corrected", 9}};
  one.cores[0].deviceMemory = {{"tensors", 1000}};
  one.cores[1].deviceMemory = {{"model_code", 24}};
  one.cores[0].status = {{"success", 5}, {"generic_error", 1}};
  one.cores[1].status = {{"success", 7}};
  metrics::Tenancy tenancy{"train-0", "ml", "main", "aws.amazon.com/neuroncore", {}, {}};
  tenancy.cores.insert(4);
  tenancy.cores.insert(5);
  const metrics::CoreTenants tenants(*node, {tenancy});
  metrics::EventCounters counters;
  metrics::LatencyHistograms histograms;
  metrics::DeepCheckSnapshot deepCheck{health::DeepCheckResult{}, kDeepCheckAt, kDeepCheckAt};
  return metrics::renderAgentMetrics(*node, stats, tenants, counters, histograms) +
         metrics::renderDeepCheckMetrics(deepCheck);
}

json topOf(const std::string& text) {
  auto samples = metrics::parsePrometheusText(text);
  EXPECT_TRUE(samples.ok()) << samples.error().message;
  kubectl_neuron::TopOptions options;
  options.json = true;
  options.now = std::chrono::system_clock::time_point(
      std::chrono::seconds(static_cast<long long>(kDeepCheckAt) + 60));
  const std::string out =
      kubectl_neuron::renderTop({{"n1", "", std::move(*samples)}}, json::object(), options);
  return json::parse(out)["nodes"][0];
}

TEST(AgentMetricsContract, TopReadsBackTheFiguresTheAgentWrites) {
  const json node = topOf(agentMetrics());
  EXPECT_EQ(node["instanceType"], "trn2.48xlarge") << node.dump(2);
  EXPECT_EQ(node["lnc"], 2);
  EXPECT_EQ(node["cores"], 64);
  EXPECT_EQ(node["coresUsed"], 2);
  EXPECT_EQ(node["deviceCount"], 16);
  EXPECT_EQ(node["healthyDevices"], 15);
  EXPECT_EQ(node["eccUncorrected"], 3);
  EXPECT_EQ(node["deepCheck"], "passed 60s ago");
  ASSERT_EQ(node["pods"].size(), 1U);
  const json& pod = node["pods"][0];
  EXPECT_EQ(pod["namespace"], "ml");
  EXPECT_EQ(pod["pod"], "train-0");
  EXPECT_EQ(pod["container"], "main");
  EXPECT_EQ(pod["resource"], "aws.amazon.com/neuroncore");
  EXPECT_EQ(pod["cores"], json({4, 5}));
  EXPECT_EQ(pod["devices"], json({1}));
  EXPECT_EQ(pod["memoryBytes"], 1024);
  EXPECT_EQ(pod["executions"], 12);
  EXPECT_EQ(pod["errors"], 1);
  // "devices" is the per-device table, beside the count rather than in its place.
  ASSERT_EQ(node["devices"].size(), 16U);
  const json& one = node["devices"][1];
  EXPECT_EQ(one["device"], 1);
  EXPECT_EQ(one["pods"], "train-0");
  EXPECT_EQ(one["memoryBytes"], 1024);
  EXPECT_EQ(one["eccUncorrected"], 3);
  EXPECT_FALSE(node["devices"][3]["healthy"].get<bool>());
}

// Every family the CLI reads is in the agent's exposition under the contract's name.
TEST(AgentMetricsContract, EveryFamilyTopReadsIsWritten) {
  const auto samples = metrics::parsePrometheusText(agentMetrics());
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  std::set<std::string> names;
  for (const metrics::Sample& sample : *samples)
    names.insert(sample.name);
  for (const char* family : {agent_metrics::kHardwareInfo, agent_metrics::kAllocationInfo,
                             agent_metrics::kExecutionStatus, agent_metrics::kExecutionErrors,
                             agent_metrics::kDeviceHealthy, agent_metrics::kEccEvents,
                             agent_metrics::kDeepCheckLastRun, agent_metrics::kDeepCheckFailures}) {
    EXPECT_TRUE(names.contains(family)) << family;
  }
  EXPECT_TRUE(names.contains(std::string(agent_metrics::kCoreMemoryUsagePrefix) + "tensors"));
}

}  // namespace
}  // namespace torus::contracts
