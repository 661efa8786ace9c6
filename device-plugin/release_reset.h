// ReleaseResetter: resets devices whose cores a container gave back, so no tenant inherits the
// previous one's state even when the next container arrives through another path than
// PreStartContainer. Releases are what kubelet's pod-resources view (AssignmentTracker) stops
// listing; nothing is reset until kubelet has answered once, so an agent restart never resets
// devices under running pods, and a device that still has cores in use is left alone.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "common/kubelet/node_view.h"
#include "device-plugin/assignments.h"

namespace torus::plugin {

class ReleaseResetter {
 public:
  // `mayReset` (may be empty): an error when the released cores' chips must not be reset yet (a
  // pod kubelet no longer lists still runs there); they are then left to the next start.
  ReleaseResetter(kubelet::NodeView& node, AssignmentTracker& tracker,
                  std::function<Result<void>(const topology::CoreSet&)> mayReset = {});
  ~ReleaseResetter();
  ReleaseResetter(const ReleaseResetter&) = delete;
  ReleaseResetter& operator=(const ReleaseResetter&) = delete;

  // Called once kubelet's pod-resources view is known (the first successful List).
  void kubeletAnswered();

 private:
  void changed();
  void run(std::stop_token stop);

  kubelet::NodeView& node_;
  AssignmentTracker& tracker_;
  std::function<Result<void>(const topology::CoreSet&)> mayReset_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  bool armed_ = false;
  topology::CoreSet lastInUse_;
  topology::CoreSet released_;  // waiting for the worker
  ChangeNotifier::Subscription subscription_;
  std::jthread worker_;
};

}  // namespace torus::plugin
