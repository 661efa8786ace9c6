// Matching kubelet's anonymous request to the scheduler extender's promise: the oldest unused
// promise of the right size and resource family whose ids kubelet still offers.
#include "device-plugin/scheduler_handoff.h"

#include <gtest/gtest.h>

namespace torus::plugin {
namespace {

topology::CoreSet ids(std::string_view text) {
  return *topology::CoreSet::parse(text);
}

PromisedPod promise(const std::string& uid, ResourceKind kind, std::string_view set,
                    std::int64_t time, bool allocated = false) {
  return {uid, "ml/" + uid, kind, ids(set), time, allocated, {}};
}

TEST(MatchPromise, OldestFittingPromiseWins) {
  const std::vector<PromisedPod> promises = {
      promise("new", ResourceKind::kNeuronCore, "8-11", 300),
      promise("old", ResourceKind::kNeuronCore, "4-7", 100),
      promise("used", ResourceKind::kNeuronCore, "0-3", 50, true),
      promise("devices", ResourceKind::kNeuron, "12-15", 10),
  };
  auto match = matchPromise(promises, ResourceKind::kNeuronCore, 4, ids("0-63"), {});
  ASSERT_TRUE(match);
  EXPECT_EQ(match->uid, "old");
  // Not offered by kubelet any more: the next one.
  match = matchPromise(promises, ResourceKind::kNeuronCore, 4, ids("0-5,8-63"), {});
  ASSERT_TRUE(match);
  EXPECT_EQ(match->uid, "new");
  // must_include narrows it down.
  match = matchPromise(promises, ResourceKind::kNeuronCore, 4, ids("0-63"), ids("9"));
  ASSERT_TRUE(match);
  EXPECT_EQ(match->uid, "new");
  EXPECT_FALSE(matchPromise(promises, ResourceKind::kNeuronCore, 2, ids("0-63"), {}));
}

TEST(MatchPromise, DevicePromisesServeBothDeviceResources) {
  const std::vector<PromisedPod> promises = {promise("d", ResourceKind::kNeuron, "2-3", 1)};
  EXPECT_TRUE(matchPromise(promises, ResourceKind::kNeuronDevice, 2, ids("0-15"), {}));
  EXPECT_TRUE(matchPromise(promises, ResourceKind::kNeuron, 2, ids("0-15"), {}));
  EXPECT_FALSE(matchPromise(promises, ResourceKind::kNeuronCore, 2, ids("0-63"), {}));
}

}  // namespace
}  // namespace torus::plugin
