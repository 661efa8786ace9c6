// OperatorApi: every write the UltraServer operator makes to the Kubernetes API, and the reads a
// write needs (the pods of a workload, a pod's controller): the NeuronUltraServer objects, each
// workload's ResourceClaimTemplate, status, finalizer and Events, and the evictions of the pods a
// failure strategy or a deletion restarts. What to write is decided elsewhere (model/: the
// allocator and the object builders); this is the API side only, as the extender's kube/ is.
// Called from the reconcile thread alone.
//
// Fenced: every write first asks `leading` (the lease) and a replica that lost it writes nothing;
// object and status writes carry the resourceVersion they were decided on, so a write decided on
// a stale read is refused (409) and the next pass decides again.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/kube/kube_client.h"
#include "ultraserver-operator/model/allocator.h"

namespace torus::ultraserver {

// Held by a workload until its pods are gone and its UltraServers released.
inline constexpr const char* kFinalizer = "neuron.aws.com/ultraserver-operator";
bool hasFinalizer(const nlohmann::json& object);

class OperatorApi {
 public:
  // Objects as the informers hold them, by "namespace/name".
  using Cache = std::map<std::string, std::shared_ptr<const nlohmann::json>>;

  // `templateTrust`: how long a template known to be as wanted is not read again (a template
  // someone deleted is then written anew). `leading`: whether this replica may write now.
  OperatorApi(kube::KubeConfig kube, std::string nameSpace, std::chrono::seconds templateTrust,
              std::function<bool()> leading);

  struct WorkloadPods {
    std::vector<nlohmann::json> mine;  // the owners of the workload's claims (podsOfWorkload)
    // Pods that name the workload's template, own no claim of it and have not ended: made after
    // the template was deleted (a controller recreating them), or not yet given their claim.
    // Never evicted.
    std::vector<nlohmann::json> claimless;
  };
  // The pods of the workload's namespace, sorted by `uids` (model's podsOfWorkload).
  Result<WorkloadPods> podsOf(const Workload& workload, const std::set<std::string>& uids);
  // Evicts (pods/eviction, so PodDisruptionBudgets hold) those of `pods` (the workload's own)
  // that the outcome restarts, each with an Event on the workload. An eviction a budget refuses
  // is reported (Event EvictionBlocked) and returned as an error, so the pass is retried.
  Result<void> evictPods(const Workload& workload, const WorkloadOutcome& outcome,
                         const std::vector<nlohmann::json>& pods);
  // Deletes the workload's ResourceClaimTemplate when it is the workload's (its owner), so that
  // no claim is made from it while the workload is deleted.
  Result<void> deleteClaimTemplate(const Workload& workload);
  // "Deployment ns/name" (through its ReplicaSet), "StatefulSet ns/name", ...: the controller
  // that makes `pod`; "" for a pod of none.
  std::string controllerOf(const nlohmann::json& pod);
  // A Warning Event on the workload.
  void warn(const Workload& workload, const std::string& reason, const std::string& message);
  // Creates the NeuronUltraServer objects not in `stored` and brings every one's spec and status
  // (its allocations) to what the plan says.
  Result<void> writeUltraServers(const std::vector<UltraServer>& servers,
                                 const std::vector<Allocation>& allocations, const Cache& stored);
  // Writes the workload's ResourceClaimTemplate unless it is as wanted; a template of the same
  // name that is not the workload's makes the outcome Failed.
  Result<void> ensureClaimTemplate(const Workload& workload, WorkloadOutcome& outcome);
  // The workload's finalizer (added, or removed once `allocationsReleased`), status and, when its
  // state changes, an Event.
  Result<void> writeWorkload(const Workload& workload, const WorkloadOutcome& outcome,
                             const nlohmann::json& stored, bool allocationsReleased);

  std::uint64_t podsEvicted() const { return podsEvicted_.load(); }

 private:
  // An error unless this replica may write (it holds the lease).
  Result<void> fence() const;
  // Whether a refused eviction of this pod is the first in five minutes: its Event is posted once
  // then, not on every retry.
  bool firstBlockSince(const std::string& podUid);
  void postEvent(const Workload& workload, bool warning, const std::string& reason,
                 const std::string& message);

  kube::KubeClient client_;
  std::string nameSpace_;
  std::chrono::seconds templateTrust_;
  struct EnsuredTemplate {
    nlohmann::json wanted;
    std::chrono::steady_clock::time_point checkedAt;
  };
  std::map<std::string, EnsuredTemplate> ensured_;  // by workload ref
  std::function<bool()> leading_;
  std::atomic<std::uint64_t> podsEvicted_{0};
  std::map<std::string, std::chrono::steady_clock::time_point> blockedWarned_;  // by pod UID
};

}  // namespace torus::ultraserver
