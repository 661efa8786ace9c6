// The pods a prepared claim serves, and whether one of them still runs on the node. kubelet
// forgets a force-deleted pod at once while its containers run out their grace period, and its
// DRA reconcile (once a minute) unprepares the claims of pods it no longer counts active: a tick
// inside that window would give the claim's chips back, reset them and hand them to the next
// claim under the old containers. The pod's cgroup, named after its UID, says when they are gone
// (node-runtime/reset/pod_processes.h); until then the claim stays prepared and kubelet retries.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "dra-driver/kubelet/claim_driver.h"

namespace torus::dra {

// Whether a process of the pod with this UID runs on the node; an error when the node cannot
// say (the agent cannot list /proc).
using PodStillRuns = std::function<Result<bool>(const std::string& podUid)>;

struct ReservedPod {
  std::string name;
  std::string uid;
};
// The pods in the claim's status.reservedFor (not other kinds of consumer).
std::vector<ReservedPod> reservedPods(const nlohmann::json& claim);
std::vector<std::string> reservedPodUids(const nlohmann::json& claim);

// Adds the UIDs of `more` that `known` lacks; whether any was added.
bool addConsumers(std::vector<std::string>& known, const std::vector<std::string>& more);

// FailedPrecondition naming the first consumer with a process still on the node (kubelet
// retries the unprepare). When the node cannot say, the claim is given back and the reason
// logged: a denied process scan (the grant probe reports it) must not hold chips for ever.
Result<void> checkConsumersStopped(const ClaimRef& claim, const std::vector<std::string>& consumers,
                                   const PodStillRuns& stillRuns);

}  // namespace torus::dra
