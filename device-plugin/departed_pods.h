// DepartedPods: pods kubelet has stopped listing whose containers may still run on the node.
// kubelet drops a force-deleted pod from its active pods at once, so pod-resources stops listing
// it and its device ids are free for the next pod, while it is still killing its containers (about
// 2 s; longer for a process slow to exit, or a kubelet that was away as the pod was deleted)
// (kubernetes pkg/kubelet/kubelet_pods.go, GetActivePods; kubernetes#104824). A container
// given those ids must not start, nor its chip be reset, while the old one still runs there.
// Fed by every pod-resources List; asked before a container starts and before a release reset.
// Thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/topology/node.h"
#include "device-plugin/assignments.h"

namespace torus::plugin {

class DepartedPods {
 public:
  // The UID of a pod on this node by namespace/name (nullopt when not known); and whether a pod
  // of that UID still has processes on the node (an error when that cannot be told).
  using UidOf = std::function<std::optional<std::string>(const std::string& pod)>;
  using StillRuns = std::function<Result<bool>(const std::string& uid)>;
  DepartedPods(UidOf uidOf, StillRuns stillRuns)
      : uidOf_(std::move(uidOf)), stillRuns_(std::move(stillRuns)) {}

  // The holders of one List: a pod listed before and not now, or now under another UID (deleted
  // and made again under its name), has departed with the cores it held; a departed pod listed
  // again under its own UID had not (an older List left it out), and is forgotten.
  void listed(const topology::Node& node, const std::vector<Holder>& holders);

  // Ok when no departed pod still runs on a device of `cores`; otherwise FailedPrecondition
  // naming it (kubelet retries the start), or Unavailable when whether it runs cannot be told.
  // A departed pod found gone is forgotten.
  Result<void> checkNoneRunsOn(const topology::Node& node, const topology::CoreSet& cores);

  std::size_t size() const;  // departed pods remembered, for tests and /debug

 private:
  struct Tenant {
    std::string uid;  // empty: not known when listed
    topology::CoreSet cores;
  };
  struct Departed {
    std::string pod;
    Tenant tenant;
  };
  // A node sees a handful at most; past this the oldest is dropped.
  static constexpr std::size_t kRemembered = 1024;

  UidOf uidOf_;
  StillRuns stillRuns_;
  mutable std::mutex mutex_;
  std::map<std::string, Tenant> listed_;  // by namespace/name
  std::vector<Departed> departed_;        // oldest first
};

}  // namespace torus::plugin
