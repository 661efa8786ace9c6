// OperatorApi: every write the UltraServer operator makes to the Kubernetes API, and the one read
// a write needs (the pods of a workload): the NeuronUltraServer objects, each workload's
// ResourceClaimTemplate, status, finalizer and Events, and the pods a failure strategy restarts.
// What to write is decided elsewhere (model/: the allocator and the object builders); this is the
// API side only, as the extender's kube/ is. Called from the reconcile thread alone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
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
  // someone deleted is then written anew).
  OperatorApi(kube::KubeConfig kube, std::string nameSpace, std::chrono::seconds templateTrust);

  // The pods made from the workload's claim template.
  Result<std::vector<nlohmann::json>> podsOf(const Workload& workload);
  // Deletes those of `pods` (the workload's, from podsOf) that the outcome restarts.
  Result<void> deletePods(const Workload& workload, const WorkloadOutcome& outcome,
                          const std::vector<nlohmann::json>& pods);
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

  std::uint64_t podsDeleted() const { return podsDeleted_.load(); }

 private:
  kube::KubeClient client_;
  std::string nameSpace_;
  std::chrono::seconds templateTrust_;
  struct EnsuredTemplate {
    nlohmann::json wanted;
    std::chrono::steady_clock::time_point checkedAt;
  };
  std::map<std::string, EnsuredTemplate> ensured_;  // by workload ref
  std::atomic<std::uint64_t> podsDeleted_{0};
};

}  // namespace torus::ultraserver
