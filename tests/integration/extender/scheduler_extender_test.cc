// The whole extender started in-process, as main() starts it: settings checked before anything
// is reached, a simulated cluster served on a free loopback port, stop() closing it.
#include "scheduler-extender/app/scheduler_extender.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/file_io.h"
#include "common/config/settings.h"
#include "tests/integration/loopback_socket.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::extender {
namespace {

using nlohmann::json;

ExtenderConfig simulated() {
  ExtenderConfig config;
  config.listen = "127.0.0.1:0";
  config.simulateCluster = "trn1.32xlarge:2";
  config.urlPrefix = "neuron/";
  return config;
}

std::string filterRequest() {
  std::string body =
      *readSmallFile(std::string(TORUS_SOURCE_DIR) +
                         "/tests/fixtures/captures/nodecachecapable-filter.request.json",
                     1 << 20);
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"fake-trn-node-1", "sim-trn1.32xlarge-0"},
        {"fake-trn-node-2", "sim-trn1.32xlarge-1"}}) {
    for (std::size_t at = body.find(from); at != std::string::npos; at = body.find(from, at)) {
      body.replace(at, from.size(), to);
    }
  }
  return body;
}

TEST(SchedulerExtender, ServesTheVerbsOnASimulatedClusterUntilStopped) {
  ExtenderConfig config = simulated();
  ASSERT_TRUE(normalizeExtenderConfig(config).ok());
  EXPECT_EQ(config.urlPrefix, "/neuron");
  auto extender = SchedulerExtender::start(config);
  ASSERT_TRUE(extender.ok()) << extender.error().message;
  const int port = (*extender)->port();
  ASSERT_GT(port, 0);

  const auto reply = testing::httpPost(port, "/neuron/filter", filterRequest());
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->substr(0, 3), "200") << *reply;
  const json filtered = json::parse(reply->substr(4));
  // Both nodes fit; the pod states no preference, so filter answers with the one node chosen.
  EXPECT_EQ(filtered["NodeNames"], json({"sim-trn1.32xlarge-0"})) << filtered.dump();
  EXPECT_EQ(testing::httpGet(port, "/readyz").value_or("").substr(0, 3), "200");

  (*extender)->stop();
  EXPECT_FALSE(testing::connectLoopback(port).valid());
  (*extender)->stop();  // idempotent
}

TEST(SchedulerExtender, BadSettingsAreNamedBeforeAnythingIsReached) {
  ExtenderConfig badListen = simulated();
  badListen.listen = "nowhere";
  auto listen = normalizeExtenderConfig(badListen);
  ASSERT_FALSE(listen.ok());
  EXPECT_EQ(listen.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(listen.error().message.find("--listen"), std::string::npos) << listen.error().message;

  ExtenderConfig halfTls = simulated();
  halfTls.tlsCertFile = "/nonexistent/cert.pem";
  auto tls = normalizeExtenderConfig(halfTls);
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.error().message.find("TLS needs both"), std::string::npos);

  ExtenderConfig badCluster = simulated();
  badCluster.simulateCluster = "trn9.huge:2";
  auto cluster = SchedulerExtender::start(badCluster);
  ASSERT_FALSE(cluster.ok());
  EXPECT_EQ(cluster.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(cluster.error().message.find("trn9.huge"), std::string::npos)
      << cluster.error().message;

  ExtenderConfig noCluster = simulated();
  noCluster.simulateCluster.clear();
  noCluster.kubeconfig = "/nonexistent/kubeconfig";
  auto none = SchedulerExtender::start(noCluster);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no cluster to serve"), std::string::npos)
      << none.error().message;
}

// The settings table is the one declaration: every field a flag, so docs/config.md cannot drift.
TEST(SchedulerExtender, EverySettingHasAFlag) {
  ExtenderConfig config;
  config::SettingTable table("neuron-scheduler-extender");
  registerExtenderSettings(table, &config);
  const std::string reference = table.markdownReference();
  for (const char* flag : {"--listen", "--url-prefix", "--simulate-cluster", "--kubeconfig",
                           "--assume-ttl", "--max-body-mib", "--request-memory-mib",
                           "--scheduler-name", "--cross-resource-preemption", "--serve-state"}) {
    EXPECT_NE(reference.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace torus::extender
