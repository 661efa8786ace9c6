#include "scheduler-extender/state/pod_demand.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/json_fields.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/contracts/neuron_names.h"
#include "common/kube/quantity.h"

namespace torus::extender {
namespace {

using nlohmann::json;

using contracts::kResourceNames;

// A Kubernetes quantity for an extended resource: a whole number, sent as a string or a number.
Result<int> wholeQuantity(const json& value, const std::string& path) {
  if (value.is_number_unsigned() || value.is_number_integer()) {
    const auto number = value.get<std::int64_t>();
    if (number < 0 || number > 4096)
      return fieldError(path, "expected 0..4096, got " + jsonText(value));
    return static_cast<int>(number);
  }
  if (!value.is_string())
    return fieldError(path, "expected a quantity, got " + jsonTypeName(value));
  auto count = kube::wholeQuantity(value.get<std::string>(), 0, 4096);
  if (!count) return fieldError(path, count.error().message);
  return static_cast<int>(*count);
}

// Per resource, what one container asks for: requests, or limits when requests are absent.
Result<std::map<std::string, int>> containerAsks(const json& container, const std::string& path) {
  std::map<std::string, int> asks;
  if (!container.is_object())
    return fieldError(path, "expected an object, got " + jsonTypeName(container));
  const auto resources = container.find("resources");
  if (resources == container.end() || resources->is_null()) return asks;
  if (!resources->is_object()) {
    return fieldError(path + ".resources", "expected an object, got " + jsonTypeName(*resources));
  }
  for (const char* section : {"limits", "requests"}) {  // requests win: read them last
    const auto map = resources->find(section);
    if (map == resources->end() || map->is_null()) continue;
    if (!map->is_object()) {
      return fieldError(path + ".resources." + section,
                        "expected an object, got " + jsonTypeName(*map));
    }
    for (const std::string_view name : kResourceNames) {
      const auto value = map->find(name);
      if (value == map->end()) continue;
      auto count =
          wholeQuantity(*value, path + ".resources." + section + "[\"" + std::string(name) + "\"]");
      if (!count) return std::move(count).error();
      asks[std::string(name)] = *count;
    }
  }
  return asks;
}

// The pod's gang from its labels. A malformed gang is the pod's problem, not the request's: the
// pod is still read (its devices are still counted once bound) and filter says what is wrong.
void readGang(const json& metadata, PodDemand& demand) {
  const auto labels = metadata.find("labels");
  if (labels == metadata.end() || !labels->is_object()) return;
  const auto name = labels->find(contracts::kGangLabel);
  const auto size = labels->find(contracts::kGangSizeLabel);
  const bool hasName =
      name != labels->end() && name->is_string() && !name->get_ref<const std::string&>().empty();
  const bool hasSize = size != labels->end() && size->is_string();
  if (!hasName && !hasSize) return;
  if (!hasName) {
    demand.gangProblem = std::string("label ") + contracts::kGangSizeLabel + " is set but " +
                         contracts::kGangLabel + " (the gang's name) is not";
    return;
  }
  if (!hasSize) {
    demand.gangProblem = std::string("label ") + contracts::kGangLabel + " is set but " +
                         contracts::kGangSizeLabel + " (how many pods the gang has) is not";
    return;
  }
  auto count = parseInt(size->get_ref<const std::string&>(), 1, contracts::kMaxGangSize);
  if (!count) {
    demand.gangProblem =
        std::string("label ") + contracts::kGangSizeLabel + ": " + count.error().message;
    return;
  }
  demand.gang = GangRef{name->get<std::string>(), *count};
}

// Preferences in spec that kube-scheduler's score plugins weigh (NodeAffinity, InterPodAffinity,
// PodTopologySpread). A malformed one counts as stated: its pod keeps the full scoring.
bool statesPreferences(const json& spec) {
  const auto nonEmpty = [](const json& object, const char* key) {
    const auto found = object.find(key);
    return found != object.end() && !found->is_null() && !(found->is_array() && found->empty());
  };
  if (const auto affinity = spec.find("affinity");
      affinity != spec.end() && affinity->is_object()) {
    for (const char* kind : {"nodeAffinity", "podAffinity", "podAntiAffinity"}) {
      const auto terms = affinity->find(kind);
      if (terms != affinity->end() && terms->is_object() &&
          nonEmpty(*terms, "preferredDuringSchedulingIgnoredDuringExecution")) {
        return true;
      }
    }
  }
  const auto spread = spec.find("topologySpreadConstraints");
  if (spread == spec.end() || spread->is_null()) return false;
  if (!spread->is_array()) return true;
  return std::any_of(spread->begin(), spread->end(), [](const json& constraint) {
    if (!constraint.is_object()) return true;
    const auto when = constraint.find("whenUnsatisfiable");
    return when == constraint.end() || !when->is_string() || *when != "DoNotSchedule";
  });
}

Result<PodDemand> parsePod(const json* pod, const std::string& path) {
  if (pod == nullptr || pod->is_null()) return fieldError(path, "missing");
  if (!pod->is_object())
    return fieldError(path, "expected a Pod object, got " + jsonTypeName(*pod));
  PodDemand demand;
  const auto metadata = pod->find("metadata");
  if (metadata == pod->end() || !metadata->is_object())
    return fieldError(path + ".metadata", "missing");
  auto name = required<std::string>(*metadata, "name", path + ".metadata");
  if (!name) return std::move(name).error();
  auto ns = optional<std::string>(*metadata, "namespace", path + ".metadata");
  if (!ns) return std::move(ns).error();
  auto uid = optional<std::string>(*metadata, "uid", path + ".metadata");
  if (!uid) return std::move(uid).error();
  demand.name = *name;
  demand.namespace_ = ns->empty() ? "default" : *ns;
  demand.uid = *uid;
  readGang(*metadata, demand);
  const auto spec = pod->find("spec");
  if (spec == pod->end() || !spec->is_object()) return fieldError(path + ".spec", "missing");
  if (const auto group = spec->find("schedulingGroup");
      group != spec->end() && group->is_object()) {
    const auto groupName = group->find("podGroupName");
    if (groupName != group->end() && groupName->is_string()) {
      demand.podGroup = groupName->get<std::string>();
    }
  }
  if (const auto priority = spec->find("priority");
      priority != spec->end() && !priority->is_null()) {
    if (!priority->is_number_integer()) {
      return fieldError(path + ".spec.priority",
                        "expected an integer, got " + jsonTypeName(*priority));
    }
    const bool inRange =
        priority->is_number_unsigned()
            ? priority->get<std::uint64_t>() <= std::numeric_limits<std::int32_t>::max()
            : std::in_range<std::int32_t>(priority->get<std::int64_t>());
    if (!inRange)
      return fieldError(path + ".spec.priority", priority->dump() + " is not a 32-bit integer");
    demand.priority = priority->get<int>();
  }
  demand.statesPreferences = statesPreferences(*spec);
  std::map<std::string, int> total;
  std::map<std::string, int> initMax;
  for (const char* list : {"containers", "initContainers"}) {
    const auto containers = spec->find(list);
    if (containers == spec->end() || containers->is_null()) continue;
    if (!containers->is_array()) {
      return fieldError(path + ".spec." + list,
                        "expected a list, got " + jsonTypeName(*containers));
    }
    for (std::size_t i = 0; i < containers->size(); ++i) {
      auto asks =
          containerAsks((*containers)[i], path + ".spec." + list + "[" + std::to_string(i) + "]");
      if (!asks) return std::move(asks).error();
      for (const auto& [resource, count] : *asks) {
        if (std::string_view(list) == "containers") {
          total[resource] += count;
        } else {
          initMax[resource] = std::max(initMax[resource], count);
        }
      }
    }
  }
  for (const auto& [resource, count] : initMax)
    total[resource] = std::max(total[resource], count);
  std::erase_if(total, [](const auto& entry) { return entry.second == 0; });
  if (total.size() > 1) {
    std::vector<std::string> names;
    for (const auto& [resource, count] : total)
      names.push_back(resource);
    return fieldError(path, "asks for " + joinStrings(names, " and ") +
                                "; a pod can take Neuron cores or whole devices, not both");
  }
  if (!total.empty()) {
    demand.resourceName = total.begin()->first;
    demand.count = total.begin()->second;
    demand.unit = demand.resourceName == contracts::kNeuronCoreResource
                      ? topology::AllocationUnit::kCore
                      : topology::AllocationUnit::kDevice;
  }
  return demand;
}

}  // namespace

Result<PodDemand> parsePodObject(const json& pod, const std::string& path) {
  return parsePod(&pod, path);
}

std::string instanceTypeOf(const json& node) {
  const auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) return "";
  const auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return "";
  for (const char* key : {contracts::kInstanceTypeLabel, contracts::kBetaInstanceTypeLabel}) {
    const auto label = labels->find(key);
    if (label != labels->end() && label->is_string()) return label->get<std::string>();
  }
  return "";
}

}  // namespace torus::extender
