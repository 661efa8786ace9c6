// The node agent binary on a simulated trn2.48xlarge as the kubelet stand-in first sees it: both
// resources registered and every core and device listed. The tests that run the binary start
// from here, so they wait for it the same way and with the same patience.
#pragma once

#include <gtest/gtest.h>

#include "tests/integration/device_plugin/device_plugin_fixture.h"
#include "tests/integration/device_plugin/fake_kubelet.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {

// Call under ASSERT_NO_FATAL_FAILURE: a plugin that never registers ends the test. The first
// wait is the longest, as it covers the agent's start.
inline void waitForTrn2AgentResources(FakeKubelet& kubelet, const BackgroundProcess& agent) {
  ASSERT_TRUE(kubelet.waitForRegistration(kCores, 1, 20s)) << agent.stderrText();
  ASSERT_TRUE(kubelet.waitForRegistration(kDevices, 1, 5s)) << agent.stderrText();
  EXPECT_TRUE(kubelet.waitForDevices(
      kCores, [](const auto& d) { return d.size() == 64; }, 5s));
  EXPECT_TRUE(kubelet.waitForDevices(
      kDevices, [](const auto& d) { return d.size() == 16; }, 5s));
}

}  // namespace torus::testing
