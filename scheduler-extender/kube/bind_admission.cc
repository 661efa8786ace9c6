#include "scheduler-extender/kube/bind_admission.h"

#include <nlohmann/json.hpp>

#include "common/kube/object_fields.h"

namespace torus::extender {

BindAdmission::BindAdmission(const kube::KubeConfig& config, const NodeFactsIndex& nodes)
    : clients_(config, 2), nodes_(nodes) {}

void BindAdmission::applyPods(const std::vector<PodUpdate>& pods) {
  std::lock_guard lock(mutex_);
  pendingPods_.clear();
  for (const PodUpdate& pod : pods)
    applyPodLocked(pod);
}

void BindAdmission::applyPod(const PodUpdate& pod) {
  std::lock_guard lock(mutex_);
  applyPodLocked(pod);
}

void BindAdmission::applyPodLocked(const PodUpdate& pod) {
  if (pod.uid.empty()) return;
  const PodRecord* record = pod.record ? &*pod.record : nullptr;
  if (pod.deleted || record == nullptr || !record->nodeName.empty() || record->deleting) {
    pendingPods_.erase(pod.uid);
    return;
  }
  if (!record->demand.wantsNeuron()) return;
  pendingPods_[pod.uid] = record->nodeRules;
}

Result<void> BindAdmission::check(const PodDemand& pod, const std::string& node) {
  std::optional<PodNodeRules> rules;
  {
    std::lock_guard lock(mutex_);
    if (const auto known = pendingPods_.find(pod.uid); known != pendingPods_.end()) {
      rules = known->second;
    }
  }
  if (!rules) {
    // Created a moment ago, or the watch is behind: ask the API.
    auto fetched =
        clients_.acquire()->get("/api/v1/namespaces/" + pod.namespace_ + "/pods/" + pod.name);
    if (!fetched) return std::move(fetched).error().withContext("looking up pod " + pod.key());
    if (kube::stringAt(*fetched, {"metadata", "uid"}) != pod.uid) {
      return makeError(ErrorCode::kNotFound, "pod " + pod.key() + " was replaced");
    }
    rules = parsePodNodeRules(*fetched);
  }
  const auto facts = nodes_.find(node);
  if (!facts) return makeError(ErrorCode::kNotFound, "node " + node + " is not in the cluster");
  if (std::string refusal = admissionRefusal(*facts, *rules); !refusal.empty()) {
    return makeError(ErrorCode::kFailedPrecondition, std::move(refusal));
  }
  return {};
}

std::size_t BindAdmission::pendingPods() const {
  std::lock_guard lock(mutex_);
  return pendingPods_.size();
}

}  // namespace torus::extender
