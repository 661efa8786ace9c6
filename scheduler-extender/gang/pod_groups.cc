#include "scheduler-extender/gang/pod_groups.h"

#include <nlohmann/json.hpp>

#include "common/kube/object_fields.h"

namespace torus::extender {
namespace {

using nlohmann::json;

std::string keyOf(const json& podGroup) {
  return kube::stringAt(podGroup, {"metadata", "namespace"}) + "/" +
         kube::stringAt(podGroup, {"metadata", "name"});
}

}  // namespace

PodGroupIndex::Entry PodGroupIndex::entryOf(const json& podGroup) {
  auto minCount = gangMinCountOf(podGroup);
  return minCount ? Entry{*minCount, ""} : Entry{std::nullopt, minCount.error().message};
}

Result<std::optional<int>> gangMinCountOf(const json& podGroup) {
  const auto spec = podGroup.find("spec");
  if (spec == podGroup.end() || !spec->is_object()) {
    return makeError(ErrorCode::kInvalidArgument, "spec: missing");
  }
  const auto policy = spec->find("schedulingPolicy");
  if (policy == spec->end() || !policy->is_object()) {
    return makeError(ErrorCode::kInvalidArgument, "spec.schedulingPolicy: missing");
  }
  const auto gang = policy->find("gang");
  if (gang == policy->end() || gang->is_null()) return std::optional<int>();
  const auto minCount = gang->is_object() ? gang->find("minCount") : gang->end();
  if (!gang->is_object() || minCount == gang->end() || !minCount->is_number_integer()) {
    return makeError(ErrorCode::kInvalidArgument,
                     "spec.schedulingPolicy.gang.minCount: expected a whole number");
  }
  const auto value = minCount->get<std::int64_t>();
  if (value < 1 || value > 1'000'000) {
    return makeError(ErrorCode::kInvalidArgument, "spec.schedulingPolicy.gang.minCount: " +
                                                      std::to_string(value) + " is out of range");
  }
  return std::optional<int>(static_cast<int>(value));
}

void PodGroupIndex::applyList(const std::vector<std::shared_ptr<const json>>& items) {
  std::map<std::string, Entry> fresh;
  for (const auto& item : items)
    fresh[keyOf(*item)] = entryOf(*item);
  std::lock_guard lock(mutex_);
  byKey_ = std::move(fresh);
}

void PodGroupIndex::apply(const json& podGroup, bool deleted) {
  const std::string key = keyOf(podGroup);
  if (deleted) {
    std::lock_guard lock(mutex_);
    byKey_.erase(key);
    return;
  }
  Entry entry = entryOf(podGroup);
  std::lock_guard lock(mutex_);
  byKey_[key] = std::move(entry);
}

void PodGroupIndex::setServed(bool served) {
  std::lock_guard lock(mutex_);
  served_ = served;
}

bool PodGroupIndex::served() const {
  std::lock_guard lock(mutex_);
  return served_;
}

PodGroupIndex::Lookup PodGroupIndex::find(const std::string& podNamespace,
                                          const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = byKey_.find(podNamespace + "/" + name);
  if (it == byKey_.end()) return {};
  return {true, it->second.gangMinCount, it->second.problem};
}

}  // namespace torus::extender
