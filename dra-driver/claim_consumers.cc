#include "dra-driver/claim_consumers.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/kube/object_fields.h"
#include "common/metrics/event_counters.h"

namespace torus::dra {

std::vector<ReservedPod> reservedPods(const nlohmann::json& claim) {
  std::vector<ReservedPod> pods;
  const nlohmann::json& reserved = kube::fieldAt(claim, {"status", "reservedFor"});
  if (!reserved.is_array()) return pods;
  for (const nlohmann::json& consumer : reserved) {
    if (kube::stringAt(consumer, {"resource"}) != "pods" ||
        !kube::stringAt(consumer, {"apiGroup"}).empty()) {
      continue;
    }
    pods.push_back({kube::stringAt(consumer, {"name"}), kube::stringAt(consumer, {"uid"})});
  }
  return pods;
}

std::vector<std::string> reservedPodUids(const nlohmann::json& claim) {
  std::vector<std::string> uids;
  for (ReservedPod& pod : reservedPods(claim)) {
    if (!pod.uid.empty()) uids.push_back(std::move(pod.uid));
  }
  return uids;
}

bool addConsumers(std::vector<std::string>& known, const std::vector<std::string>& more) {
  bool added = false;
  for (const std::string& uid : more) {
    if (std::find(known.begin(), known.end(), uid) != known.end()) continue;
    known.push_back(uid);
    added = true;
  }
  return added;
}

Result<void> checkConsumersStopped(const ClaimRef& claim, const std::vector<std::string>& consumers,
                                   const PodStillRuns& stillRuns) {
  if (!stillRuns) return okResult();
  for (const std::string& uid : consumers) {
    auto runs = stillRuns(uid);
    if (!runs) {
      TORUS_LOG(Warn, Dra,
                "cannot tell whether a pod of a claim being given back still runs; giving it back",
                {"claim", claim.key()}, {"pod_uid", uid}, {"error", runs.error().message});
      continue;
    }
    if (*runs) {
      metrics::processCounters().add(metrics::names::kDraUnprepareHeldTotal, {});
      return makeError(ErrorCode::kFailedPrecondition,
                       "claim " + claim.key() + ": pod " + uid +
                           ", which it was prepared for, still has processes on this node (a "
                           "force-deleted pod's containers are still being stopped); its chips "
                           "are given back once they are gone (kubelet retries)");
    }
  }
  return okResult();
}

}  // namespace torus::dra
