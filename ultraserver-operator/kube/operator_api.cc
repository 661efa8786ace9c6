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

// A pod that ended (Succeeded, Failed) or is being deleted: it holds nothing and is made again by
// nobody.
bool finished(const json& pod) {
  const std::string phase = stringAt(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed" ||
         !stringAt(pod, {"metadata", "deletionTimestamp"}).empty();
}

// Whether `object` names the object of `uid` among its owners.
bool ownedBy(const json& object, const std::string& uid) {
  const json& owners = fieldAt(object, {"metadata", "ownerReferences"});
  return owners.is_array() && std::any_of(owners.begin(), owners.end(), [&](const json& owner) {
           return owner.is_object() && owner.value("uid", json()) == uid;
         });
}

// A delete of `object` only: a UID precondition, so one of the same name made since is kept.
json deleteOptionsFor(const json& object) {
  return {{"apiVersion", "v1"},
          {"kind", "DeleteOptions"},
          {"preconditions", {{"uid", stringAt(object, {"metadata", "uid"})}}}};
}

// The resourceVersion of a write's answer, or `fallback` when it has none.
std::string versionOf(const Result<json>& written, const std::string& fallback) {
  if (!written) return fallback;
  const std::string version = stringAt(*written, {"metadata", "resourceVersion"});
  return version.empty() ? fallback : version;
}

}  // namespace

bool hasFinalizer(const json& object) {
  const json& finalizers = fieldAt(object, {"metadata", "finalizers"});
  return finalizers.is_array() &&
         std::find(finalizers.begin(), finalizers.end(), json(kFinalizer)) != finalizers.end();
}

OperatorApi::OperatorApi(kube::KubeConfig kube, std::string nameSpace,
                         std::chrono::seconds templateTrust, std::function<bool()> leading)
    : client_(std::move(kube)),
      nameSpace_(std::move(nameSpace)),
      templateTrust_(templateTrust),
      leading_(std::move(leading)) {}

Result<void> OperatorApi::fence() const {
  if (leading_ && !leading_()) {
    return makeError(ErrorCode::kAborted,
                     "this replica no longer holds the lease neuron-ultraserver-operator: it "
                     "writes nothing");
  }
  return {};
}

Result<OperatorApi::WorkloadPods> OperatorApi::podsOf(const Workload& workload,
                                                      const std::set<std::string>& uids) {
  auto pods = client_.get("/api/v1/namespaces/" + workload.nameSpace + "/pods");
  if (!pods) return std::move(pods).error().withContext("listing the pods of " + workload.ref());
  WorkloadPods sorted;
  for (const json& pod : kube::arrayAt(*pods, {"items"})) {
    if (uids.contains(stringAt(pod, {"metadata", "uid"}))) {
      sorted.mine.push_back(pod);
    } else if (usesTemplate(pod, workload.claimTemplate) && !finished(pod)) {
      sorted.claimless.push_back(pod);
    }
  }
  return sorted;
}

Result<void> OperatorApi::evictPods(const Workload& workload, const WorkloadOutcome& outcome,
                                    const std::vector<json>& pods) {
  const std::set<std::string> nodes(outcome.restartPodsOn.begin(), outcome.restartPodsOn.end());
  const std::string why = outcome.degradedReason.empty()
                              ? contracts::workloadStateName(outcome.state)
                              : outcome.degradedReason;
  for (const json& pod : pods) {
    const std::string node = stringAt(pod, {"spec", "nodeName"});
    if (!outcome.restartAllPods && !nodes.count(node)) continue;
    if (!stringAt(pod, {"metadata", "deletionTimestamp"}).empty()) continue;
    if (auto allowed = fence(); !allowed) return allowed;
    const std::string name = stringAt(pod, {"metadata", "name"});
    const std::string path =
        "/api/v1/namespaces/" + workload.nameSpace + "/pods/" + name + "/eviction";
    // The UID precondition: a pod of the same name made since is not this one.
    const json eviction = {
        {"apiVersion", "policy/v1"},
        {"kind", "Eviction"},
        {"metadata", {{"name", name}, {"namespace", workload.nameSpace}}},
        {"deleteOptions", {{"preconditions", {{"uid", stringAt(pod, {"metadata", "uid"})}}}}}};
    auto evicted = client_.create(path, eviction);
    if (!evicted && evicted.error().code == ErrorCode::kNotFound) continue;
    if (!evicted && evicted.error().message.find("disruption budget") != std::string::npos) {
      if (firstBlockSince(stringAt(pod, {"metadata", "uid"}))) {
        warn(workload, "EvictionBlocked",
             "pod " + name + " on " + node + " is not evicted yet (" + why +
                 "): its PodDisruptionBudget allows no disruption now; retrying");
      }
      return std::move(evicted).error().withContext("evicting pod " + name);
    }
    if (!evicted) {
      return std::move(evicted).error().withContext("evicting pod " + workload.nameSpace + "/" +
                                                    name);
    }
    ++podsEvicted_;
    TORUS_LOG(Info, UltraServer, "evicted a pod of the workload", {"workload", workload.ref()},
              {"pod", name}, {"node", node}, {"why", why});
    postEvent(workload, false, "EvictedPod",
              "evicted pod " + name + " on " + node + " (" + why + ")");
  }
  return {};
}

bool OperatorApi::firstBlockSince(const std::string& podUid) {
  constexpr auto kRepeatAfter = std::chrono::minutes(5);
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(blockedWarned_,
                [&](const auto& entry) { return now - entry.second > kRepeatAfter; });
  return blockedWarned_.emplace(podUid, now).second;
}

Result<void> OperatorApi::deleteClaimTemplate(const Workload& workload) {
  const std::string path = claimTemplatePath(workload.nameSpace, workload.claimTemplate);
  auto existing = client_.get(path);
  if (!existing) {
    if (existing.error().code == ErrorCode::kNotFound) return {};
    return std::move(existing).error().withContext("reading " + path);
  }
  if (!ownedBy(*existing, workload.uid)) return {};  // someone else's: not ours to delete
  if (auto allowed = fence(); !allowed) return allowed;
  if (auto removed = client_.remove(path, deleteOptionsFor(*existing));
      !removed && removed.error().code != ErrorCode::kNotFound) {
    return std::move(removed).error().withContext("deleting " + path);
  }
  ensured_.erase(workload.ref());
  TORUS_LOG(Info, UltraServer, "deleted the workload's ResourceClaimTemplate first",
            {"workload", workload.ref()}, {"template", workload.claimTemplate});
  return {};
}

std::string OperatorApi::controllerOf(const json& pod) {
  const std::string nameSpace = stringAt(pod, {"metadata", "namespace"});
  const json& controller = kube::controllerOf(pod);
  if (controller.is_null()) return "";
  const std::string kind = stringAt(controller, {"kind"});
  const std::string name = stringAt(controller, {"name"});
  if (kind == "ReplicaSet") {
    // A Deployment's ReplicaSet: name the Deployment, which is what a user scales.
    auto replicaSet = client_.get("/apis/apps/v1/namespaces/" + nameSpace + "/replicasets/" + name);
    if (replicaSet) {
      if (const json& owner = kube::controllerOf(*replicaSet); !owner.is_null())
        return stringAt(owner, {"kind"}) + " " + nameSpace + "/" + stringAt(owner, {"name"});
    }
  }
  return kind + " " + nameSpace + "/" + name;
}

void OperatorApi::warn(const Workload& workload, const std::string& reason,
                       const std::string& message) {
  postEvent(workload, true, reason, message);
}

void OperatorApi::postEvent(const Workload& workload, bool warning, const std::string& reason,
                            const std::string& message) {
  if (!fence()) return;
  json event = kube::eventObject(
      {std::string(contracts::kWorkloadKind), workload.name, workload.nameSpace, workload.uid},
      workload.nameSpace, !warning, reason, message, "neuron-ultraserver-operator");
  event["involvedObject"]["apiVersion"] = contracts::kUltraServerApiVersion;
  if (auto posted = client_.create("/api/v1/namespaces/" + workload.nameSpace + "/events", event);
      !posted) {
    TORUS_LOG(Warn, UltraServer, "could not post an Event", {"workload", workload.ref()},
              {"reason", reason}, {"error", posted.error().message});
  }
}

Result<void> OperatorApi::writeUltraServers(const std::vector<UltraServer>& servers,
                                            const std::vector<Allocation>& allocations,
                                            const Cache& stored) {
  const std::string now = utcNowRfc3339();
  for (const UltraServer& server : servers) {
    if (auto allowed = fence(); !allowed) return allowed;
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
    // Each write carries the version it was decided on: one on a stale read gets 409.
    std::string version = stringAt(object, {"metadata", "resourceVersion"});
    if (const json spec = ultraServerSpec(server); fieldAt(object, {"spec"}) != spec) {
      auto patched =
          client_.mergePatch(path, {{"metadata", {{"resourceVersion", version}}}, {"spec", spec}});
      if (!patched) return std::move(patched).error().withContext("updating " + server.name);
      version = versionOf(patched, version);
    }
    const json& previous = fieldAt(object, {"status"});
    const json status = ultraServerStatus(server, allocations, previous, now);
    if (previous != status) {
      auto patched = client_.mergePatch(
          path + "/status", {{"metadata", {{"resourceVersion", version}}}, {"status", status}});
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
    if (!ownedBy(*existing, workload.uid)) {
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
    // The UID precondition: a template of the same name made since (by anyone) is not this one.
    if (auto allowed = fence(); !allowed) return allowed;
    if (auto removed = client_.remove(path, deleteOptionsFor(*existing));
        !removed && removed.error().code != ErrorCode::kNotFound) {
      return std::move(removed).error().withContext("replacing " + path);
    }
  } else if (existing.error().code != ErrorCode::kNotFound) {
    return std::move(existing).error();
  }
  if (auto allowed = fence(); !allowed) return allowed;
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
  if (auto allowed = fence(); !allowed) return allowed;
  const std::string path = contracts::workloadPath(workload.nameSpace, workload.name);
  std::string version = stringAt(stored, {"metadata", "resourceVersion"});
  if (workload.deleting) {
    if (allocationsReleased && hasFinalizer(stored)) {
      json finalizers = json::array();
      for (const json& finalizer : fieldAt(stored, {"metadata", "finalizers"})) {
        if (finalizer != kFinalizer) finalizers.push_back(finalizer);
      }
      auto patched = client_.mergePatch(
          path, {{"metadata", {{"finalizers", finalizers}, {"resourceVersion", version}}}});
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
        path, {{"metadata", {{"finalizers", finalizers}, {"resourceVersion", version}}}});
    if (!patched)
      return std::move(patched).error().withContext("adding the finalizer to " + workload.ref());
    version = versionOf(patched, version);
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
  auto patched = client_.mergePatch(
      path + "/status", {{"metadata", {{"resourceVersion", version}}}, {"status", status}});
  if (!patched && patched.error().code != ErrorCode::kNotFound) {
    return std::move(patched).error().withContext("writing the status of " + workload.ref());
  }
  if (patched && (stringAt(previous, {"state"}) != contracts::workloadStateName(outcome.state) ||
                  (outcome.degraded && wasDegraded != outcome.degradedReason))) {
    TORUS_LOG(Info, UltraServer, "workload state", {"workload", workload.ref()},
              {"state", contracts::workloadStateName(outcome.state)}, {"message", outcome.message});
    // An Event as well, so `kubectl describe nusw` and `kubectl get events` tell the story; after
    // the status, so a write refused as stale (and decided again) does not tell it twice.
    const bool warning = outcome.state == WorkloadState::kFailed || outcome.degraded;
    postEvent(workload, warning, outcome.degraded ? outcome.degradedReason : outcome.reason,
              outcome.degraded ? outcome.degradedMessage : outcome.message);
  }
  return {};
}

}  // namespace torus::ultraserver
