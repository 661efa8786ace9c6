// The extender as a process against a Kubernetes API stand-in (real HTTP on loopback): what the
// API tests of the extender share — the process started on a kubeconfig, kube-scheduler's verbs
// posted to it, and its /state read back.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/base/temp_dir.h"
#include "tests/integration/kube/fake_api_server.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {

using namespace std::chrono_literals;

inline constexpr const char* kCores = "aws.amazon.com/neuroncore";
inline constexpr const char* kDevices = "aws.amazon.com/neuron";

class ExtenderApiTest : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  void SetUp() override {
    auto dir = TempDir::create("extender-api");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    kubeconfig_ = (dir_->path() / "kubeconfig").string();
    api_.writeKubeconfig(kubeconfig_);
    api_.put("nodes", makeNode("trn-a", "trn2.48xlarge"));
    api_.put("nodes", makeNode("trn-b", "trn2.48xlarge"));
    api_.put("nodes", makeNode("cpu-1", "m5.large"));
    startExtender();
  }
  void TearDown() override { stopExtender(); }

  // Flags added to the extender's command line the next time it starts.
  std::vector<std::string> extraFlags;

  void startExtender() {
    std::vector<std::string> args{binaryPath("neuron-scheduler-extender"),
                                  "--kubeconfig=" + kubeconfig_, "--listen=127.0.0.1:0",
                                  "--log-level=debug", "--serve-state"};
    args.insert(args.end(), extraFlags.begin(), extraFlags.end());
    extender_ = std::make_unique<BackgroundProcess>(args);
    const auto log = extender_->waitForStderr("\"serving\"", 10s);
    ASSERT_TRUE(log.has_value()) << extender_->stderrText();
    port_ = loggedPort(*log, "\"serving\"");
    ASSERT_TRUE(eventually([&] {
      const auto ready = httpGet(port_, "/readyz");
      return ready && ready->substr(0, 3) == "200";
    })) << extender_->stderrText();
  }
  void stopExtender() {
    if (!extender_) return;
    extender_->signal(SIGTERM);
    EXPECT_EQ(extender_->waitExit(10s), std::optional<int>(0)) << extender_->stderrText();
    extender_.reset();
  }

  json post(const std::string& verb, const json& body) {
    const auto reply = httpPost(port_, "/" + verb, body.dump());
    EXPECT_TRUE(reply.has_value());
    if (!reply) return {};
    EXPECT_EQ(reply->substr(0, 3), "200") << *reply;
    return json::parse(reply->substr(4), nullptr, false);
  }
  json state() {
    const auto reply = httpGet(port_, "/state");
    EXPECT_TRUE(reply.has_value());
    return reply ? json::parse(reply->substr(4), nullptr, false) : json();
  }
  json allocationOf(const std::string& pod) {
    const json now = state();
    for (const json& allocation : now["allocations"]) {
      if (allocation["pod"] == pod) return allocation;
    }
    return nullptr;
  }
  std::string freeCores(const std::string& node) {
    const json now = state();
    for (const json& entry : now["nodes"]) {
      if (entry["name"] == node) return entry["freeCores"];
    }
    return "?";
  }

  // kube-scheduler's path for one pod: filter over both nodes, then bind to `node`.
  json schedule(const std::string& name, const std::string& resource, int count,
                const std::string& node) {
    api_.put("pods", makePod("ml", name, resource, count));
    const json pod = *api_.get("pods", "ml/" + name);
    // kube-scheduler's own filters left `node` alone, so that is where the extender binds it.
    const json filtered = post("filter", {{"Pod", pod}, {"NodeNames", {node}}});
    EXPECT_EQ(filtered["Error"], "");
    return post("bind", {{"PodName", name},
                         {"PodNamespace", "ml"},
                         {"PodUID", pod["metadata"]["uid"]},
                         {"Node", node}});
  }

  // Pods "first" and "second", four cores each, bound to trn-a (cores 0-7) and tracked; `first`
  // and `second` are the pods as the API then holds them, for a test to rewrite their ids as the
  // node's agent would. Call under ASSERT_NO_FATAL_FAILURE.
  void scheduleTwoFourCorePodsOnTrnA(json* first, json* second) {
    ASSERT_EQ(schedule("first", kCores, 4, "trn-a")["Error"], "");
    ASSERT_EQ(schedule("second", kCores, 4, "trn-a")["Error"], "");
    ASSERT_TRUE(eventually([&] { return freeCores("trn-a") == "8-63"; }));
    *first = *api_.get("pods", "ml/first");
    *second = *api_.get("pods", "ml/second");
  }

  FakeApiServer api_;
  std::unique_ptr<TempDir> dir_;
  std::string kubeconfig_;
  std::unique_ptr<BackgroundProcess> extender_;
  int port_ = 0;
};

}  // namespace torus::testing
