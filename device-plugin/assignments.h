// Cross-resource accounting. Cores and devices are two views of the same chips, but kubelet
// counts aws.amazon.com/neuron and aws.amazon.com/neuroncore separately and never tells a plugin
// when a pod ends. So: a device handed out whole makes its cores unavailable as neuroncore, and a
// device with any core in use is unavailable as neuron. The plugin reports such ids Unhealthy
// (kubelet then neither counts nor assigns them) and gives them back when the holder is gone.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/base/change_notifier.h"
#include "common/topology/core_set.h"
#include "common/topology/node.h"
#include "device-plugin/resource_kind.h"

namespace torus::plugin {

// Which container holds which ids, as kubelet's pod-resources lists it.
struct Holder {
  std::string pod;  // namespace/name
  std::string container;
  ResourceKind kind = ResourceKind::kNeuronCore;
  topology::CoreSet ids;
  bool operator==(const Holder&) const = default;
};

// What is held right now, per resource kind, in that kind's ids, and by whom (holders known to
// kubelet; our own Allocate calls it does not list yet have no holder).
struct Assignments {
  std::map<ResourceKind, topology::CoreSet> held;
  std::vector<Holder> holders;
  bool operator==(const Assignments&) const = default;
};

// Every core some container holds, whichever resource it came through.
topology::CoreSet coresInUse(const topology::Node& node, const Assignments& assignments);
// Ids of `kind` that another resource's holders make unavailable.
topology::CoreSet blockedIds(ResourceKind kind, const topology::Node& node,
                             const Assignments& assignments);

// Cores that two or more pods hold at once (through any resource), and those pods' holdings of
// them: kubelet gave them twice (allocation_window.h). Only cores in `cores` are looked at.
struct SharedCores {
  topology::CoreSet cores;
  std::vector<Holder> holders;  // every holding that includes a shared core, pod by pod
};
std::optional<SharedCores> sharedBetweenPods(const topology::Node& node,
                                             const topology::CoreSet& cores,
                                             const std::vector<Holder>& holders);
// "ns/a (aws.amazon.com/neuroncore 4-7), ns/b (aws.amazon.com/neuroncore 4-7)"
std::string describeHolders(const std::vector<Holder>& holders);

// Thread-safe: kubelet's pod-resources view plus our own recent Allocate calls, which kubelet
// may not list yet; those expire if kubelet never lists them (the pod failed admission).
class AssignmentTracker {
 public:
  using Clock = std::chrono::steady_clock;
  explicit AssignmentTracker(std::chrono::milliseconds allocateGrace = std::chrono::seconds(30))
      : grace_(allocateGrace) {}

  // Replaces what kubelet reports holding (the answer of one pod-resources List).
  void replaceFromKubelet(Assignments listed, Clock::time_point now = Clock::now());
  void recordAllocate(ResourceKind kind, const topology::CoreSet& ids,
                      Clock::time_point now = Clock::now());
  Assignments current(Clock::time_point now = Clock::now()) const;
  // Kubelet has answered a List since this tracker began: current() includes what kubelet holds,
  // not only this agent's own Allocate calls.
  bool kubeletListed() const;
  std::size_t pendingCount() const;  // own grants kubelet has not listed yet, for tests
  ChangeNotifier::Subscription onChange(std::function<void()> notify) {
    return notifier_.subscribe(std::move(notify));
  }

 private:
  struct Pending {
    ResourceKind kind;
    topology::CoreSet ids;
    Clock::time_point at;
  };
  Assignments currentLocked(Clock::time_point now) const;
  bool publishLocked(Clock::time_point now);

  // Far more than kubelet can admit in one grace period; a bound for a caller gone wrong.
  static constexpr std::size_t kMaxPending = 4096;
  const std::chrono::milliseconds grace_;
  mutable std::mutex mutex_;
  Assignments listed_;
  bool kubeletListed_ = false;
  Assignments published_;
  std::vector<Pending> pending_;
  ChangeNotifier notifier_;
};

}  // namespace torus::plugin
