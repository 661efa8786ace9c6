#include "ultraserver-operator/kube/operator_api.h"

#include <algorithm>
#include <set>

#include "common/base/log.h"
#include "common/base/utc_time.h"
#include "common/contracts/neuron_ultraserver.h"
#include "common/kube/event_object.h"
#include "common/kube/object_fields.h"
#include "ultraserver-operator/model/operator_objects.h"

namespace torus::ultraserver {
namespace {

using json = nlohmann::json;
using kube::fieldAt;
using kube::stringAt;

// A pod made from the workload's claim template (the pods a workload owns, whatever made them).
bool usesTemplate(const json& pod, const std::string& claimTemplate) {
  const json& claims = fieldAt(pod, {"spec", "resourceClaims"});
  if (!claims.is_array()) return false;
  return std::any_of(claims.begin(), claims.end(), [&](const json& claim) {
    return claim.is_object() && claim.value("resourceClaimTemplateName", json()) == claimTemplate;
  });
}

}  // namespace

bool hasFinalizer(const json& object) {
  const json& finalizers = fieldAt(object, {"metadata", "finalizers"});
  return finalizers.is_array() &&
         std::find(finalizers.begin(), finalizers.end(), json(kFinalizer)) != finalizers.end();
}

OperatorApi::OperatorApi(kube::KubeConfig kube, std::string nameSpace,
                         std::chrono::seconds templateTrust)
    : client_(std::move(kube)), nameSpace_(std::move(nameSpace)), templateTrust_(templateTrust) {}

Result<std::vector<json>> OperatorApi::podsOf(const Workload& workload) {
  auto pods = client_.get("/api/v1/namespaces/" + workload.nameSpace + "/pods");
  if (!pods) return std::move(pods).error().withContext("listing the pods of " + workload.ref());
  std::vector<json> mine;
  const json& items = fieldAt(*pods, {"items"});
  if (items.is_array()) {
    for (const json& pod : items) {
      if (usesTemplate(pod, workload.claimTemplate)) mine.push_back(pod);
    }
  }
  return mine;
}

Result<void> OperatorApi::deletePods(const Workload& workload, const WorkloadOutcome& outcome,
                                     const std::vector<json>& pods) {
  const std::set<std::string> nodes(outcome.restartPodsOn.begin(), outcome.restartPodsOn.end());
  for (const json& pod : pods) {
    const std::string node = stringAt(pod, {"spec", "nodeName"});
    if (!outcome.restartAllPods && !nodes.count(node)) continue;
    if (!stringAt(pod, {"metadata", "deletionTimestamp"}).empty()) continue;
    const std::string name = stringAt(pod, {"metadata", "name"});
    auto removed = client_.remove("/api/v1/namespaces/" + workload.nameSpace + "/pods/" + name);
    if (!removed && removed.error().code != ErrorCode::kNotFound) {
      return std::move(removed).error().withContext("deleting pod " + workload.nameSpace + "/" +
                                                    name);
    }
    ++podsDeleted_;
    TORUS_LOG(Info, UltraServer, "deleted a pod of the workload", {"workload", workload.ref()},
              {"pod", name}, {"node", node},
              {"why", outcome.degradedReason.empty() ? contracts::workloadStateName(outcome.state)
                                                     : outcome.degradedReason});
  }
  return {};
}

Result<void> OperatorApi::writeUltraServers(const std::vector<UltraServer>& servers,
                                            const std::vector<Allocation>& allocations,
                                            const Cache& stored) {
  const std::string now = utcNowRfc3339();
  for (const UltraServer& server : servers) {
    const auto found = stored.find(nameSpace_ + "/" + server.name);
    json object;
    if (found == stored.end()) {
      auto created = client_.create(contracts::ultraServersPath(nameSpace_),
                                    ultraServerObject(server, nameSpace_));
      // 409 (Aborted here) is "already exists": another writer, or our watch is behind.
      if (!created && created.error().code != ErrorCode::kAlreadyExists &&
          created.error().code != ErrorCode::kAborted) {
        return std::move(created).error().withContext("creating NeuronUltraServer " + server.name);
      }
      if (!created) continue;  // another writer made it: the next pass sees it
      object = *created;
      TORUS_LOG(Info, UltraServer, "found an UltraServer", {"name", server.name},
                {"nodes", static_cast<int>(server.nodes.size())});
    } else {
      object = *found->second;
    }
    const std::string path = contracts::ultraServersPath(nameSpace_) + "/" + server.name;
    if (const json spec = ultraServerSpec(server); fieldAt(object, {"spec"}) != spec) {
      auto patched = client_.mergePatch(path, {{"spec", spec}});
      if (!patched) return std::move(patched).error().withContext("updating " + server.name);
    }
    const json& previous = fieldAt(object, {"status"});
    const json status = ultraServerStatus(server, allocations, previous, now);
    if (previous != status) {
      auto patched = client_.mergePatch(path + "/status", {{"status", status}});
      if (!patched) {
        return std::move(patched).error().withContext("writing the status of " + server.name);
      }
    }
  }
  return {};
}

Result<void> OperatorApi::ensureClaimTemplate(const Workload& workload, WorkloadOutcome& outcome) {
  const json wanted = claimTemplate(workload);
  const auto now = std::chrono::steady_clock::now();
  const auto ensured = ensured_.find(workload.ref());
  if (ensured != ensured_.end() && ensured->second.wanted == wanted &&
      now - ensured->second.checkedAt < templateTrust_) {
    return {};
  }
  const std::string path = claimTemplatePath(workload.nameSpace, workload.claimTemplate);
  auto existing = client_.get(path);
  if (existing) {
    const json& owners = fieldAt(*existing, {"metadata", "ownerReferences"});
    const bool ours =
        owners.is_array() && std::any_of(owners.begin(), owners.end(), [&](const json& owner) {
          return owner.is_object() && owner.value("uid", json()) == workload.uid;
        });
    if (!ours) {
      outcome.state = WorkloadState::kFailed;
      outcome.reason = "ClaimTemplateExists";
      outcome.message = "ResourceClaimTemplate " + workload.nameSpace + "/" +
                        workload.claimTemplate +
                        " exists and is not this workload's: choose another "
                        "spec.resourceClaimTemplate.name or delete it";
      return {};
    }
    if (fieldAt(*existing, {"spec"}) == wanted["spec"]) {
      ensured_[workload.ref()] = {wanted, now};
      return {};
    }
    // A template's spec cannot change: make it anew (claims made from the old one keep theirs).
    if (auto removed = client_.remove(path);
        !removed && removed.error().code != ErrorCode::kNotFound) {
      return std::move(removed).error().withContext("replacing " + path);
    }
  } else if (existing.error().code != ErrorCode::kNotFound) {
    return std::move(existing).error();
  }
  auto created = client_.create(claimTemplatePath(workload.nameSpace, ""), wanted);
  if (!created && created.error().code != ErrorCode::kAlreadyExists &&
      created.error().code != ErrorCode::kAborted) {
    return std::move(created).error().withContext(
        "creating ResourceClaimTemplate " + workload.nameSpace + "/" + workload.claimTemplate);
  }
  if (created) {
    TORUS_LOG(Info, UltraServer, "wrote the workload's ResourceClaimTemplate",
              {"workload", workload.ref()}, {"template", workload.claimTemplate});
  }
  ensured_[workload.ref()] = {wanted, now};
  return {};
}

Result<void> OperatorApi::writeWorkload(const Workload& workload, const WorkloadOutcome& outcome,
                                        const json& stored, bool allocationsReleased) {
  const std::string path = contracts::workloadPath(workload.nameSpace, workload.name);
  if (workload.deleting) {
    if (allocationsReleased && hasFinalizer(stored)) {
      json finalizers = json::array();
      for (const json& finalizer : fieldAt(stored, {"metadata", "finalizers"})) {
        if (finalizer != kFinalizer) finalizers.push_back(finalizer);
      }
      auto patched = client_.mergePatch(
          path, {{"metadata",
                  {{"finalizers", finalizers},
                   {"resourceVersion", stringAt(stored, {"metadata", "resourceVersion"})}}}});
      if (!patched && patched.error().code != ErrorCode::kNotFound) {
        return std::move(patched).error().withContext("removing the finalizer of " +
                                                      workload.ref());
      }
      ensured_.erase(workload.ref());
      TORUS_LOG(Info, UltraServer, "workload released", {"workload", workload.ref()});
      return {};
    }
  } else if (!hasFinalizer(stored)) {
    json finalizers = fieldAt(stored, {"metadata", "finalizers"});
    if (!finalizers.is_array()) finalizers = json::array();
    finalizers.push_back(kFinalizer);
    auto patched = client_.mergePatch(
        path, {{"metadata",
                {{"finalizers", finalizers},
                 {"resourceVersion", stringAt(stored, {"metadata", "resourceVersion"})}}}});
    if (!patched)
      return std::move(patched).error().withContext("adding the finalizer to " + workload.ref());
  }
  const json& previous = fieldAt(stored, {"status"});
  const json status = workloadStatus(workload, outcome, previous, utcNowRfc3339());
  if (previous == status) return {};
  // The reason of the Degraded condition while it was True, "" otherwise.
  std::string wasDegraded;
  if (const json& conditions = fieldAt(previous, {"conditions"}); conditions.is_array()) {
    for (const json& condition : conditions) {
      if (condition.is_object() && condition.value("type", json()) == "Degraded" &&
          condition.value("status", json()) == "True") {
        wasDegraded = stringAt(condition, {"reason"});
      }
    }
  }
  if (stringAt(previous, {"state"}) != contracts::workloadStateName(outcome.state) ||
      (outcome.degraded && wasDegraded != outcome.degradedReason)) {
    TORUS_LOG(Info, UltraServer, "workload state", {"workload", workload.ref()},
              {"state", contracts::workloadStateName(outcome.state)}, {"message", outcome.message});
    // An Event as well, so `kubectl describe nusw` and `kubectl get events` tell the story.
    const bool warning = outcome.state == WorkloadState::kFailed || outcome.degraded;
    json event = kube::eventObject(
        {std::string(contracts::kWorkloadKind), workload.name, workload.nameSpace, workload.uid},
        workload.nameSpace, !warning, outcome.degraded ? outcome.degradedReason : outcome.reason,
        outcome.degraded ? outcome.degradedMessage : outcome.message,
        "neuron-ultraserver-operator");
    event["involvedObject"]["apiVersion"] = contracts::kUltraServerApiVersion;
    if (auto posted = client_.create("/api/v1/namespaces/" + workload.nameSpace + "/events", event);
        !posted) {
      TORUS_LOG(Warn, UltraServer, "could not post an Event", {"workload", workload.ref()},
                {"error", posted.error().message});
    }
  }
  auto patched = client_.mergePatch(path + "/status", {{"status", status}});
  if (!patched && patched.error().code != ErrorCode::kNotFound) {
    return std::move(patched).error().withContext("writing the status of " + workload.ref());
  }
  return {};
}

}  // namespace torus::ultraserver
