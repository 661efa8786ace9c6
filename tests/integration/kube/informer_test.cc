// The informer against the API-server stand-in: it lists, follows the watch, lists again after
// 410 Gone (handing over the whole collection so missed deletions heal), and stops promptly even
// while a watch is open.
#include "common/kube/informer.h"

#include <functional>
#include <map>
#include <mutex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/kube/fake_api_server.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::kube {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::eventually;
using testing::FakeApiServer;

// A name -> resourceVersion cache, as a caller would keep.
struct Cache {
  std::mutex mutex;
  std::map<std::string, std::string> objects;
  int lists = 0;

  InformerHandlers handlers() {
    return {[this](const auto& items) {
              std::lock_guard lock(mutex);
              objects.clear();
              for (const auto& item : items)
                objects[(*item)["metadata"]["name"]] = (*item)["metadata"]["resourceVersion"];
              ++lists;
            },
            [this](const WatchEvent& event) {
              std::lock_guard lock(mutex);
              const std::string name = (*event.object)["metadata"]["name"];
              if (event.type == "DELETED") {
                objects.erase(name);
              } else {
                objects[name] = (*event.object)["metadata"]["resourceVersion"];
              }
            }};
  }
  bool has(const std::string& name) {
    std::lock_guard lock(mutex);
    return objects.count(name) != 0;
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return objects.size();
  }
};

KubeConfig configOf(const FakeApiServer& api) {
  KubeConfig config;
  config.server = api.url();
  config.token = kube::BearerToken::fixed("t");
  return config;
}

TEST(Informer, ListsThenFollowsTheWatch) {
  FakeApiServer api;
  api.put("nodes", testing::makeNode("a", "trn2.48xlarge"));
  Cache cache;
  Informer informer(configOf(api), "/api/v1/nodes", cache.handlers());
  ASSERT_TRUE(eventually([&] { return informer.hasSynced(); }));
  EXPECT_TRUE(cache.has("a"));
  api.put("nodes", testing::makeNode("b", "trn1.32xlarge"));
  EXPECT_TRUE(eventually([&] { return cache.has("b"); }));
  api.remove("nodes", "a");
  EXPECT_TRUE(eventually([&] { return !cache.has("a"); }));
  EXPECT_EQ(informer.lists(), 1U);
}

TEST(Informer, GoneMeansListAgainAndMissedDeletionsHeal) {
  FakeApiServer api;
  api.put("pods", testing::makePod("ns", "p1", "aws.amazon.com/neuron", 1));
  api.put("pods", testing::makePod("ns", "p2", "aws.amazon.com/neuron", 1));
  Cache cache;
  InformerOptions options;
  options.minBackoff = 10ms;
  Informer informer(configOf(api), "/api/v1/pods", cache.handlers(), options);
  ASSERT_TRUE(eventually([&] { return cache.size() == 2; }));
  api.removeSilently("pods", "ns/p1");
  api.expireWatches();
  ASSERT_TRUE(eventually([&] { return informer.lists() == 2; }));
  EXPECT_TRUE(eventually([&] { return !cache.has("p1") && cache.has("p2"); }));
  api.put("pods", testing::makePod("ns", "p3", "aws.amazon.com/neuron", 1));
  EXPECT_TRUE(eventually([&] { return cache.has("p3"); }));
}

// The node agent's selection: the pods of one node that have not ended. A pod that finishes
// leaves it, and the watch says so with DELETED, as the API server's watch cache does.
TEST(Informer, APodLeavingAFieldSelectionArrivesDeleted) {
  FakeApiServer api;
  json running = testing::makePod("ns", "running", "aws.amazon.com/neuron", 1);
  running["spec"]["nodeName"] = "node-a";
  running["status"]["phase"] = "Running";
  json done = running;
  done["metadata"]["name"] = "done";
  done["status"]["phase"] = "Succeeded";
  json elsewhere = running;
  elsewhere["metadata"]["name"] = "elsewhere";
  elsewhere["spec"]["nodeName"] = "node-b";
  for (const json& pod : {running, done, elsewhere})
    api.put("pods", pod);
  Cache cache;
  Informer informer(configOf(api),
                    "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a%2C"
                    "status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed",
                    cache.handlers());
  ASSERT_TRUE(eventually([&] { return informer.hasSynced(); }));
  EXPECT_TRUE(cache.has("running"));
  EXPECT_EQ(cache.size(), 1U) << "a finished pod and another node's pod are not listed";
  running = api.get("pods", "ns/running").value();
  running["status"]["phase"] = "Succeeded";
  api.put("pods", running);
  EXPECT_TRUE(eventually([&] { return !cache.has("running"); }));
  EXPECT_EQ(informer.lists(), 1U) << "seen through the watch, not a re-list";
}

TEST(Informer, AnUnsupportedFieldSelectorIsRefusedByName) {
  FakeApiServer api;
  KubeClient client(configOf(api), 2s);
  auto list = client.get("/api/v1/pods?fieldSelector=spec.nosuchfield%3Dx");
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.error().message.find("field label not supported: spec.nosuchfield"),
            std::string::npos)
      << list.error().message;
}

TEST(Informer, ListFailuresBackOffAndRecover) {
  FakeApiServer api;
  api.failNext("GET", "/api/v1/nodes", 500);
  api.failNext("GET", "/api/v1/nodes", 503);
  api.put("nodes", testing::makeNode("a", "trn2.48xlarge"));
  Cache cache;
  InformerOptions options;
  options.minBackoff = 10ms;
  Informer informer(configOf(api), "/api/v1/nodes", cache.handlers(), options);
  EXPECT_TRUE(eventually([&] { return cache.has("a"); }));
  EXPECT_EQ(api.lists("nodes"), 1);  // the two failed attempts were answered before counting
}

TEST(Informer, StopsPromptlyWithAWatchOpen) {
  FakeApiServer api;
  Cache cache;
  auto informer = std::make_unique<Informer>(configOf(api), "/api/v1/nodes", cache.handlers());
  ASSERT_TRUE(eventually([&] { return api.openWatches() == 1; }));
  const auto started = std::chrono::steady_clock::now();
  informer.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
}

}  // namespace
}  // namespace torus::kube
