// The slice publisher (dra-driver/kubelet/) against the API-server stand-in, with a source of
// plain slices behind the SliceSource seam: what the source says is what the API holds, owned by
// the Node, with a pool generation that only rises; an API server that drops counters or taints
// never stores a pool that needed them, from the first write on; and a slice someone else
// deletes or edits is put back.
#include "dra-driver/kubelet/slice_publisher.h"

#include <chrono>
#include <functional>
#include <mutex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/temp_dir.h"
#include "common/kube/kube_config.h"
#include "tests/integration/kube/fake_api_server.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::dra {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::FakeApiServer;
using testing::kResourceSlices;

constexpr const char* kDriver = "test.example.com";
constexpr const char* kNode = "node-a";

// A pool of one slice: `devices` devices, each consuming a shared counter when counters are kept,
// device 0 tainted while `tainted` (or left out where taints are not kept).
class PlainSliceSource final : public SliceSource {
 public:
  std::vector<json> slices(const KeptFields& kept,
                           const std::map<std::string, std::string>& labels) override {
    std::lock_guard lock(mutex_);
    asked_.push_back(kept);
    labels_ = labels;
    json devices = json::array();
    for (int i = 0; i < devices_; ++i) {
      json device = {{"name", "d" + std::to_string(i)}};
      if (kept.counters) {
        device["consumesCounters"] =
            json::array({{{"counterSet", "set"}, {"counters", {{"units", {{"value", "1"}}}}}}});
      }
      if (i == 0 && tainted_) {
        if (!kept.taints) continue;
        device["taints"] = json::array({{{"key", "test/unhealthy"}, {"effect", "NoSchedule"}}});
      }
      devices.push_back(std::move(device));
    }
    json spec = {{"driver", kDriver},
                 {"nodeName", kNode},
                 {"pool", {{"name", kNode}, {"generation", 0}, {"resourceSliceCount", 1}}},
                 {"devices", std::move(devices)}};
    if (kept.counters) {
      spec["sharedCounters"] = json::array(
          {{{"name", "set"}, {"counters", {{"units", {{"value", std::to_string(devices_)}}}}}}});
    }
    return {json{{"apiVersion", "resource.k8s.io/v1"},
                 {"kind", "ResourceSlice"},
                 {"metadata", {{"name", std::string(kNode) + "-" + kDriver + "-0"}}},
                 {"spec", std::move(spec)}}};
  }
  ChangeNotifier::Subscription onChange(std::function<void()> notify) override {
    return changed_.subscribe(std::move(notify));
  }

  bool ready() override {
    std::lock_guard lock(mutex_);
    ++readyAsked_;
    return ready_;
  }
  void setReady(bool ready) {
    {
      std::lock_guard lock(mutex_);
      ready_ = ready;
    }
    changed_.notify();
  }
  int readyAsked() const {
    std::lock_guard lock(mutex_);
    return readyAsked_;
  }

  void set(int devices, bool tainted) {
    {
      std::lock_guard lock(mutex_);
      devices_ = devices;
      tainted_ = tainted;
    }
    changed_.notify();
  }
  std::vector<KeptFields> asked() const {
    std::lock_guard lock(mutex_);
    return asked_;
  }
  std::map<std::string, std::string> labels() const {
    std::lock_guard lock(mutex_);
    return labels_;
  }

 private:
  mutable std::mutex mutex_;
  int devices_ = 2;
  bool tainted_ = false;
  bool ready_ = true;
  int readyAsked_ = 0;
  std::vector<KeptFields> asked_;
  std::map<std::string, std::string> labels_;
  ChangeNotifier changed_;
};

class SlicePublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = TempDir::create("slices");
    ASSERT_TRUE(made.ok());
    dir_ = std::make_unique<TempDir>(std::move(*made));
    api_.writeKubeconfig((dir_->path() / "kubeconfig").string());
    json node = testing::makeNode(kNode, "trn2.48xlarge");
    node["metadata"]["labels"]["topology.k8s.aws/network-node-layer-1"] = "nn-1";
    api_.put("nodes", node);
  }

  std::unique_ptr<SlicePublisher> start() {
    auto kube = kube::loadKubeconfig(dir_->path() / "kubeconfig");
    EXPECT_TRUE(kube.ok());
    PublisherOptions options;
    options.driverName = kDriver;
    options.nodeName = kNode;
    auto publisher = std::make_unique<SlicePublisher>(*kube, source_, options);
    publisher->start();
    return publisher;
  }

  std::optional<json> slice() const {
    return api_.get(kResourceSlices, std::string(kNode) + "-" + kDriver + "-0");
  }
  std::int64_t generation() const {
    const auto stored = slice();
    return stored ? (*stored)["spec"]["pool"]["generation"].get<std::int64_t>() : 0;
  }
  // Writes of slices that were stored (not dry runs).
  std::vector<FakeApiServer::Write> storingWrites() const {
    std::vector<FakeApiServer::Write> stored;
    for (const auto& write : api_.writes()) {
      if (write.path.find("resourceslices") != std::string::npos && !write.dryRun &&
          write.method != "DELETE") {
        stored.push_back(write);
      }
    }
    return stored;
  }

  FakeApiServer api_;
  std::unique_ptr<TempDir> dir_;
  PlainSliceSource source_;
};

TEST_F(SlicePublisherTest, TheApiHoldsWhatTheSourceSaysOwnedByTheNodeWithARisingGeneration) {
  auto publisher = start();
  ASSERT_TRUE(testing::eventually([&] { return generation() == 1; }, 5s));
  const json first = *slice();
  EXPECT_EQ(first["spec"]["devices"].size(), 2U);
  EXPECT_EQ(first["spec"]["driver"], kDriver);
  const json owner = first["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "Node");
  EXPECT_EQ(owner["uid"], (*api_.get("nodes", kNode))["metadata"]["uid"]);
  EXPECT_EQ(source_.labels().at("topology.k8s.aws/network-node-layer-1"), "nn-1")
      << "the source is given the Node's labels";

  source_.set(3, false);
  ASSERT_TRUE(testing::eventually([&] { return generation() == 2; }, 5s));
  EXPECT_EQ((*slice())["spec"]["devices"].size(), 3U);
  const std::size_t writes = storingWrites().size();
  std::this_thread::sleep_for(300ms);
  source_.set(3, false);  // told of a change that changes nothing: no write, no new generation
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(storingWrites().size(), writes);
  EXPECT_EQ(generation(), 2);
}

// A source that cannot describe its pool yet (a restarted agent that has not read its node's
// reservation) gets nothing written: the slices an earlier run published stay as they are, and
// the pool is written once the source is ready.
TEST_F(SlicePublisherTest, NothingIsWrittenUntilTheSourceIsReady) {
  json earlier = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", std::string(kNode) + "-" + kDriver + "-0"}}},
      {"spec",
       {{"driver", kDriver},
        {"nodeName", kNode},
        {"pool", {{"name", kNode}, {"generation", 7}, {"resourceSliceCount", 1}}},
        {"devices", json::array({{{"name", "d0"},
                                  {"taints", json::array({{{"key", "test/reserved"},
                                                           {"effect", "NoSchedule"}}})}}})}}}};
  api_.put(kResourceSlices, earlier);
  source_.setReady(false);
  auto publisher = start();
  ASSERT_TRUE(testing::eventually([&] { return source_.readyAsked() > 0; }, 5s));
  EXPECT_TRUE(storingWrites().empty());
  EXPECT_TRUE(source_.asked().empty()) << "the pool is not even built";
  EXPECT_EQ((*slice())["spec"]["devices"], earlier["spec"]["devices"]);
  source_.setReady(true);
  ASSERT_TRUE(testing::eventually([&] { return generation() == 8; }, 5s));
  EXPECT_EQ((*slice())["spec"]["devices"].size(), 2U);
}

TEST_F(SlicePublisherTest, AnApiThatDropsCountersAndTaintsNeverStoresAPoolThatNeededThem) {
  api_.dropSliceFields(true, true);
  source_.set(2, true);
  auto publisher = start();
  ASSERT_TRUE(testing::eventually([&] { return generation() >= 1; }, 5s));
  // Found out by dry run before the first write: every stored write is already without them.
  const auto writes = storingWrites();
  ASSERT_FALSE(writes.empty());
  ASSERT_LT(writes.size(), api_.writes().size()) << "the dry runs came first";
  for (const auto& write : writes) {
    EXPECT_FALSE(write.body["spec"].contains("sharedCounters")) << write.body.dump();
    EXPECT_EQ(write.body["spec"]["devices"].size(), 1U) << "the tainted device is left out";
    EXPECT_FALSE(write.body["spec"]["devices"][0].contains("consumesCounters"));
  }
  EXPECT_FALSE(publisher->kept().counters);
  EXPECT_FALSE(publisher->kept().taints);
  const auto asked = source_.asked();
  ASSERT_GE(asked.size(), 2U);
  EXPECT_TRUE(asked.front().counters) << "first asked for everything";
  EXPECT_FALSE(asked.back().counters);
  EXPECT_FALSE(asked.back().taints);
}

TEST_F(SlicePublisherTest, AnApiThatKeepsEverythingKeepsTheFullPool) {
  source_.set(2, true);
  auto publisher = start();
  ASSERT_TRUE(testing::eventually([&] { return generation() == 1; }, 5s));
  const json stored = *slice();
  EXPECT_TRUE(stored["spec"].contains("sharedCounters"));
  EXPECT_EQ(stored["spec"]["devices"][0]["taints"][0]["key"], "test/unhealthy");
  EXPECT_TRUE(publisher->kept().counters);
  EXPECT_TRUE(publisher->kept().taints);
}

TEST_F(SlicePublisherTest, ASliceDeletedOrEditedBySomeoneElseIsPutBack) {
  auto publisher = start();
  ASSERT_TRUE(testing::eventually([&] { return generation() == 1; }, 5s));
  api_.remove(kResourceSlices, std::string(kNode) + "-" + kDriver + "-0");
  ASSERT_TRUE(testing::eventually([&] { return slice().has_value(); }, 5s))
      << "a deleted slice is written again";
  EXPECT_EQ(generation(), 2);

  json edited = *slice();
  edited["spec"]["devices"] = json::array({{{"name", "d0"}}});
  api_.put(kResourceSlices, edited);
  ASSERT_TRUE(testing::eventually(
      [&] { return slice() && (*slice())["spec"]["devices"].size() == 2U; }, 5s))
      << "an edited slice is written back as published";
}

}  // namespace
}  // namespace torus::dra
