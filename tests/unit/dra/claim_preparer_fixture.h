// ClaimPreparer on a fake node: resets the test can hold or fail, the claims and pods the API
// would answer, and a prepare as kubelet's plumbing makes it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/temp_dir.h"
#include "dra-driver/claim_preparer.h"

namespace torus::testing {

using dra::ClaimPreparer;
using dra::ClaimReader;
using dra::ClaimRef;
using dra::PreparedDevice;
using dra::PreparerOptions;

using nlohmann::json;

class FakeNode : public kubelet::NodeView {
 public:
  FakeNode() { snapshot_.node = *topology::catalogNode("trn2.48xlarge"); }
  kubelet::NodeSnapshot snapshot() const override { return snapshot_; }
  ChangeNotifier::Subscription onChange(std::function<void()> notify) override {
    return notifier_.subscribe(std::move(notify));
  }
  Result<void> prepareCores(const topology::CoreSet& cores,
                            const topology::CoreSet& inUseElsewhere) override {
    {
      // A reset held by the test, as a real chip's takes seconds.
      std::unique_lock lock(gateMutex_);
      ++resetsStarted_;
      gateChanged_.notify_all();
      gateChanged_.wait(lock, [this] { return gateOpen_; });
    }
    if (failResets) {
      return makeError(ErrorCode::kInternal,
                       "resetting neuron0: the driver reports state INVALID (2)");
    }
    std::lock_guard lock(mutex_);
    resets_.push_back(snapshot_.node.devicesOfCores(cores) -
                      snapshot_.node.devicesOfCores(inUseElsewhere));
    return okResult();
  }
  std::atomic<bool> failResets{false};  // every reset fails, as a driver's INVALID state
  void holdResets() {
    std::lock_guard lock(gateMutex_);
    gateOpen_ = false;
  }
  void releaseResets() {
    std::lock_guard lock(gateMutex_);
    gateOpen_ = true;
    gateChanged_.notify_all();
  }
  // Waits until `count` resets have begun since the start.
  void waitForResetsStarted(int count) {
    std::unique_lock lock(gateMutex_);
    gateChanged_.wait(lock, [&] { return resetsStarted_ >= count; });
  }
  int resetsStarted() {
    std::lock_guard lock(gateMutex_);
    return resetsStarted_;
  }
  std::vector<std::string> resets() const {  // reset chips, one range text per reset
    std::lock_guard lock(mutex_);
    std::vector<std::string> texts;
    for (const topology::DeviceSet& chips : resets_)
      texts.push_back(chips.toRangeString());
    return texts;
  }

 private:
  kubelet::NodeSnapshot snapshot_;
  ChangeNotifier notifier_;
  mutable std::mutex mutex_;
  std::vector<topology::DeviceSet> resets_;
  std::mutex gateMutex_;
  std::condition_variable gateChanged_;
  bool gateOpen_ = true;
  int resetsStarted_ = 0;
};

inline json claimObject(const ClaimRef& ref, const std::vector<std::string>& devices) {
  json results = json::array();
  for (const std::string& device : devices) {
    results.push_back(
        {{"request", "r"}, {"driver", "neuron.aws.com"}, {"pool", "node-a"}, {"device", device}});
  }
  return {{"metadata", {{"uid", ref.uid}}},
          {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
}

class ClaimPreparerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("preparer");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    options_.pool = "node-a";
    options_.cdiRoot = dir_->path() / "cdi";
    options_.checkpointFile = dir_->path() / "checkpoint.json";
  }

  // The claims in objects_, as the API would answer.
  ClaimReader claims() {
    return [this](const std::string& nameSpace, const std::string& name) {
      const auto found = objects_.find(nameSpace + "/" + name);
      if (found == objects_.end()) {
        return Result<json>(makeError(ErrorCode::kNotFound, "no such claim"));
      }
      return Result<json>(found->second);
    };
  }

  // What kubelet's plumbing (dra_service) does: read the claim, check it, prepare it.
  Result<std::vector<PreparedDevice>> prepare(ClaimPreparer& preparer, const ClaimRef& ref) {
    auto object = claims()(ref.nameSpace, ref.name);
    if (!object) return std::move(object).error().withContext("reading claim " + ref.key());
    if (auto checked = dra::checkAllocatedClaim(*object, ref); !checked)
      return std::move(checked).error();
    return preparer.prepare(ref, *object);
  }

  std::unique_ptr<ClaimPreparer> makePreparer() {
    auto preparer = ClaimPreparer::create(
        options_, node_, [this](const std::string& nameSpace, const std::string& name) {
          const auto found = pods_.find(nameSpace + "/" + name);
          if (found == pods_.end()) return Result<json>(makeError(ErrorCode::kNotFound, "no pod"));
          return Result<json>(found->second);
        });
    EXPECT_TRUE(preparer.ok()) << preparer.error().message;
    return std::move(*preparer);
  }

  ClaimRef add(const std::string& name, const std::vector<std::string>& devices,
               const std::string& nameSpace = "ns") {
    const ClaimRef ref{"uid-" + name, nameSpace, name};
    objects_[nameSpace + "/" + name] = claimObject(ref, devices);
    return ref;
  }

  std::unique_ptr<TempDir> dir_;
  PreparerOptions options_;
  FakeNode node_;
  std::map<std::string, json> objects_;
  std::map<std::string, json> pods_;
};

}  // namespace torus::testing
