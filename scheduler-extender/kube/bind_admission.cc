#include "scheduler-extender/kube/bind_admission.h"

#include <nlohmann/json.hpp>

#include "common/kube/object_fields.h"

namespace torus::extender {
namespace {

using nlohmann::json;

bool boundOrGone(const json& pod) {
  return !kube::stringAt(pod, {"spec", "nodeName"}).empty() ||
         !kube::fieldAt(pod, {"metadata", "deletionTimestamp"}).is_null();
}

}  // namespace

BindAdmission::BindAdmission(const kube::KubeConfig& config) : clients_(config, 2) {}

void BindAdmission::applyNodeList(const std::vector<std::shared_ptr<const json>>& items) {
  nodes_.applyList(items);
}

void BindAdmission::applyNodeEvent(const kube::WatchEvent& event) {
  nodes_.applyEvent(event);
}

void BindAdmission::applyPodList(const std::vector<std::shared_ptr<const json>>& items) {
  std::lock_guard lock(mutex_);
  pendingPods_.clear();
  for (const auto& item : items)
    applyPodLocked(*item, false);
}

void BindAdmission::applyPodEvent(const kube::WatchEvent& event) {
  if (!event.object) return;
  std::lock_guard lock(mutex_);
  applyPodLocked(*event.object, event.type == "DELETED");
}

void BindAdmission::applyPodLocked(const json& pod, bool deleted) {
  const std::string uid = kube::stringAt(pod, {"metadata", "uid"});
  if (uid.empty()) return;
  if (deleted || boundOrGone(pod)) {
    pendingPods_.erase(uid);
    return;
  }
  const auto demand = parsePodObject(pod);
  if (!demand || !demand->wantsNeuron()) return;
  pendingPods_[uid] = parsePodNodeRules(pod);
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
