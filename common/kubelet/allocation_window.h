// AllocationWindow: when kubelet may be holding a device-plugin allocation in flight, so that a
// pod-resources List then would make it hand the same ids to a second pod.
//
// kubelet's device manager marks the ids it chose in its allocated set, calls the plugin's
// Allocate outside its lock, and records the pod's devices only after Allocate returns. A
// pod-resources List in between rebuilds the allocated set from the recorded pods whenever some
// pod is ready to be removed, which drops the in-flight ids; the next pod admitted can then be
// given them while the first runs (kubernetes/kubernetes#137534, in every kubelet up to 1.37).
// The plugin marks each GetPreferredAllocation and Allocate it serves; readers of pod-resources
// wait until every such call has returned, plus a margin for kubelet to record it. A List already
// on its way when kubelet asks for a preferred allocation is let finish before the answer, so its
// rebuild comes before kubelet marks its choice.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

namespace torus::kubelet {

class AllocationWindow {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    // After Allocate returns kubelet records the pod's devices at once (one map insert under its
    // lock); this covers the reply's way back and a busy node's scheduling delay.
    std::chrono::milliseconds margin{100};
    // A GetPreferredAllocation that no Allocate follows (kubelet refused the pod for another
    // reason) stops holding readers back after this long. kubelet calls Allocate right after the
    // answer, in the same goroutine: far less than this even on a busy node.
    std::chrono::milliseconds abandon{1000};
  };
  AllocationWindow() : AllocationWindow(Options{}) {}
  explicit AllocationWindow(Options options) : options_(options) {}

  // kubelet asked `resource` for a preferred allocation or an Allocate: it may have chosen ids it
  // has not recorded yet. Waits (at most `listWait`) for a List in progress to be answered.
  void opened(std::string_view resource,
              std::chrono::milliseconds listWait = std::chrono::seconds(1));
  // Allocate of `resource` returned (granted or refused): kubelet records it right after.
  void closed(std::string_view resource);

  // When a List would next be safe: nullopt when it is safe at `now`.
  std::optional<Clock::time_point> unsafeUntil(Clock::time_point now = Clock::now()) const;
  // Waits until a List is safe, at most `limit`, and then counts one List in progress until
  // endList(); true when it may be sent (false: the limit passed or a stop was requested, and
  // nothing is counted). `waited` gets how long this call waited.
  bool beginList(std::stop_token stop, std::chrono::milliseconds limit,
                 std::chrono::milliseconds* waited = nullptr);
  void endList();

 private:
  struct Calls {
    std::optional<Clock::time_point> openedAt;  // a call in flight since then
    std::optional<Clock::time_point> closedAt;  // the last Allocate returned then
  };
  std::optional<Clock::time_point> unsafeUntilLocked(Clock::time_point now) const;

  const Options options_;
  mutable std::mutex mutex_;
  std::condition_variable_any changed_;
  std::map<std::string, Calls, std::less<>> calls_;
  int listing_ = 0;            // Lists sent and not answered yet
  std::uint64_t version_ = 0;  // moves on every call, so a waiter looks again
};

}  // namespace torus::kubelet
