// The agent's hand-off following one node's pods on the API stand-in, its first list in.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "node-runtime/agent/kube/pod_handoff.h"
#include "tests/integration/kube/fake_api_server.h"

namespace torus::testing {

// Sets `handoff` to one following `node`'s pods on `api`; fails the test unless it has synced
// within 5 s (use under ASSERT_NO_FATAL_FAILURE).
inline void followHandoff(const FakeApiServer& api, const std::string& node,
                          std::unique_ptr<agent::PodAnnotationHandoff>& handoff) {
  kube::KubeConfig config;
  config.server = api.url();
  handoff = std::make_unique<agent::PodAnnotationHandoff>(config, node);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!handoff->hasSynced() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(handoff->hasSynced());
}

}  // namespace torus::testing
