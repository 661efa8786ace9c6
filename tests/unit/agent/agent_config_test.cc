// normalizeAgentConfig: settings that cannot work are refused naming the flag and the value, and
// the defaults pass.
#include "node-runtime/agent/agent_config.h"

#include <gtest/gtest.h>

namespace torus::agent {
namespace {

TEST(AgentConfig, TheDefaultsPassAndTheClearSettingIsParsed) {
  AgentConfig config;
  config.awsClear = "hold";
  auto valid = normalizeAgentConfig(config);
  ASSERT_TRUE(valid.ok()) << valid.error().message;
  EXPECT_EQ(config.aws.clear, AwsHealthClear::kHold);
}

// The device plugin and the DRA driver would hand the same chips out twice.
void bothKubeletPaths(AgentConfig& config) {
  config.dra = true;
  config.devicePlugin = true;
}

void draResyncOfTenMs(AgentConfig& config) {
  config.devicePlugin = false;
  config.dra = true;
  config.draResyncMs = 10;
}

TEST(AgentConfig, SettingsThatCannotWorkNameTheFlagAndTheValue) {
  const struct {
    const char* description;
    void (*change)(AgentConfig&);
    const char* message;
  } cases[] = {
      {"a deep check every half second", [](AgentConfig& c) { c.deepCheckIntervalMs = 500; },
       "--deep-check-interval must be 0 (off) or at least 1s, got 500ms"},
      {"a deep check timeout too short", [](AgentConfig& c) { c.deepCheckTimeoutMs = 10; },
       "--deep-check-timeout must be at least 100ms, got 10ms"},
      {"health read too often", [](AgentConfig& c) { c.healthIntervalMs = 10; },
       "--health-interval must be at least 50ms, got 10ms"},
      {"both kubelet paths", bothKubeletPaths, "--dra needs --device-plugin=false"},
      {"pod-resources read too often", [](AgentConfig& c) { c.podResourcesIntervalMs = 50; },
       "--pod-resources-interval must be at least 100ms, got 50ms"},
      {"a DRA resync too short", draResyncOfTenMs, "--dra-resync must be at least 1s, got 10ms"},
      {"an unknown clear setting", [](AgentConfig& c) { c.awsClear = "never"; },
       "--health-condition-clear"},
      {"a metrics address without a port", [](AgentConfig& c) { c.metricsAddr = "nonsense"; },
       "--metrics-addr"},
  };
  for (const auto& each : cases) {
    AgentConfig config;
    each.change(config);
    auto valid = normalizeAgentConfig(config);
    ASSERT_FALSE(valid.ok()) << each.description;
    EXPECT_NE(valid.error().message.find(each.message), std::string::npos)
        << each.description << ": " << valid.error().message;
  }
}

}  // namespace
}  // namespace torus::agent
