// PodResourcesPoller: which of our ids containers hold, as kubelet's pod-resources API lists them
// (through the shared kubelet::PodResourcesPoll: every interval, shortly after each Allocate, and
// at once when a pod on the node ended), fed to the AssignmentTracker. While the socket is missing
// the tracker only knows our own recent Allocate calls.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/kubelet/node_view.h"
#include "common/kubelet/pod_resources_poll.h"
#include "device-plugin/assignments.h"

namespace torus::plugin {

// Kubelet's rows of our resources in our ids; rows of other resources are not ours, and ids that
// do not parse (before an LNC change, another plugin's numbering) are skipped with a WARN.
Assignments assignmentsFromRows(const std::vector<kubelet::ContainerDevices>& rows,
                                const topology::Node& node);

class PodResourcesPoller {
 public:
  // `answered` runs after every successful List, once the tracker holds its answer; true asks
  // for the next List soon (a pod that ended is still being torn down).
  // `window` (may be null): no List while kubelet may hold an allocation in flight.
  PodResourcesPoller(std::string socket, std::chrono::milliseconds interval,
                     kubelet::NodeView& node, AssignmentTracker& tracker,
                     std::function<bool()> answered = {},
                     kubelet::AllocationWindow* window = nullptr);

  void pokeAfterAllocate() { poll_.pokeAfterAllocate(); }
  void pokeNow() { poll_.pokeNow(); }
  // True once kubelet has answered the first List (the tracker holds it); false after `timeout`
  // or when that List failed.
  bool waitForFirstList(std::chrono::milliseconds timeout) {
    return poll_.waitForFirstList(timeout);
  }
  // Who holds which ids, from a List made now on the caller's thread (once no allocation is in
  // flight, waiting at most `wait`); the tracker is not changed.
  Result<Assignments> listNow(std::chrono::milliseconds wait);

 private:
  bool replace(kubelet::PodResourcesRows&& rows);

  kubelet::NodeView& node_;
  AssignmentTracker& tracker_;
  std::function<bool()> answered_;
  kubelet::PodResourcesPoll poll_;  // last: its thread calls replace()
};

}  // namespace torus::plugin
