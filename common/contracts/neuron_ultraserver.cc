#include "common/contracts/neuron_ultraserver.h"

#include <array>
#include <cstddef>

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/contracts/neuron_names.h"
#include "common/kube/object_fields.h"

namespace torus::contracts {
namespace {

using json = nlohmann::json;
using kube::fieldAt;
using kube::stringAt;

// Why `name` cannot name a Kubernetes object (RFC 1123 subdomain: at most 253 characters of
// lower-case letters, digits, '-' and '.', each dot-separated part starting and ending with a
// letter or digit); "" when it can.
std::string dnsSubdomainProblem(const std::string& name) {
  if (name.size() > 253) return "longer than 253 characters";
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    const std::string_view part =
        std::string_view(name).substr(start, dot == std::string::npos ? dot : dot - start);
    if (part.empty()) return "an empty part between dots";
    for (const char c : part) {
      const bool allowed = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      if (!allowed) return "only lower-case letters, digits, '-' and '.' are allowed";
    }
    if (part.front() == '-' || part.back() == '-')
      return "must start and end with a letter or digit";
    if (dot == std::string::npos) return "";
    start = dot + 1;
  }
}

// An integer field of `spec`: its value, or nullopt when absent; `error` is set when present
// but not an integer.
std::optional<std::int64_t> integerField(const json& spec, const char* key, std::string& error) {
  if (!spec.is_object() || !spec.contains(key)) return std::nullopt;
  const json& value = spec[key];
  if (!value.is_number_integer()) {
    error = std::string("spec.") + key + " is not an integer";
    return std::nullopt;
  }
  return value.get<std::int64_t>();
}

std::string apiPath(const std::string& rest) {
  return "/apis/" + std::string(kUltraServerApiVersion) + "/" + rest;
}

}  // namespace

std::string ultraServersPath(const std::string& nameSpace) {
  return apiPath("namespaces/" + nameSpace + "/neuronultraservers");
}
std::string workloadsPath() {
  return apiPath("neuronultraserverworkloads");
}
std::string workloadPath(const std::string& nameSpace, const std::string& name) {
  return apiPath("namespaces/" + nameSpace + "/neuronultraserverworkloads/" + name);
}

const char* failureStrategyName(FailureStrategy strategy) {
  switch (strategy) {
    case FailureStrategy::kRestartAll:
      return "RestartAll";
    case FailureStrategy::kMigrateAffected:
      return "MigrateAffected";
    case FailureStrategy::kNoOp:
      break;
  }
  return "NoOp";
}

const char* workloadStateName(WorkloadState state) {
  // In the enum's order.
  static constexpr std::array<const char*, 6> kNames = {
      "Pending", "Allocating", "Allocated", "PartiallyAllocated", "Failed", "Deallocating"};
  return kNames.at(static_cast<std::size_t>(state));
}

Workload parseWorkload(const json& object) {
  Workload workload;
  workload.nameSpace = stringAt(object, {"metadata", "namespace"});
  workload.name = stringAt(object, {"metadata", "name"});
  workload.uid = stringAt(object, {"metadata", "uid"});
  workload.createdAt = stringAt(object, {"metadata", "creationTimestamp"});
  if (const json& generation = fieldAt(object, {"metadata", "generation"});
      generation.is_number_integer()) {
    workload.generation = generation.get<std::int64_t>();
  }
  workload.deleting = !stringAt(object, {"metadata", "deletionTimestamp"}).empty();
  const json& spec = fieldAt(object, {"spec"});
  std::string& error = workload.invalid;
  if (!spec.is_object()) {
    error = "spec is missing";
    return workload;
  }
  workload.instanceType = spec.value("instanceType", json()).is_string()
                              ? spec["instanceType"].get<std::string>()
                              : std::string();
  if (workload.instanceType.empty() && error.empty()) error = "spec.instanceType is missing";
  const auto size = integerField(spec, "topologySize", error);
  const auto count = integerField(spec, "serverCount", error);
  if (!error.empty()) return workload;
  if (!size) {
    error = "spec.topologySize is missing";
  } else if (*size != 1 && *size != 2 && *size != 4) {
    error = "spec.topologySize " + std::to_string(*size) +
            " is not an UltraServer configuration: 1, 2 or 4 nodes";
  } else if (!count) {
    error = "spec.serverCount is missing";
  } else if (*count < 1 || *count > 1000) {
    error = "spec.serverCount " + std::to_string(*count) + " is out of range [1, 1000]";
  }
  if (!error.empty()) return workload;
  workload.topologySize = static_cast<int>(*size);
  workload.serverCount = static_cast<int>(*count);

  const json& strategy = fieldAt(spec, {"allocationPolicy", "failureStrategy"});
  const std::string strategyName = strategy.is_string() ? strategy.get<std::string>() : "NoOp";
  if (strategyName == "NoOp" || strategyName.empty()) {
    workload.strategy = FailureStrategy::kNoOp;
  } else if (strategyName == "RestartAll") {
    workload.strategy = FailureStrategy::kRestartAll;
  } else if (strategyName == "MigrateAffected" || strategyName == "ReplaceAffected") {
    // AWS's CRD says MigrateAffected, its documentation ReplaceAffected: both mean the same.
    workload.strategy = FailureStrategy::kMigrateAffected;
  } else {
    error = "spec.allocationPolicy.failureStrategy \"" + strategyName +
            "\" is not NoOp, RestartAll or MigrateAffected";
    return workload;
  }
  const json& templateName = fieldAt(spec, {"resourceClaimTemplate", "name"});
  workload.claimTemplate = templateName.is_string() && !templateName.get<std::string>().empty()
                               ? templateName.get<std::string>()
                               : workload.name;
  // The API server would refuse to create it; checked here, the workload says why at once and
  // no UltraServer is reserved for a template that can never exist.
  if (auto why = dnsSubdomainProblem(workload.claimTemplate); !why.empty()) {
    error = "spec.resourceClaimTemplate.name \"" +
            std::string(clipForMessage(workload.claimTemplate, 80)) +
            "\" is not a valid object name: " + why;
    return workload;
  }
  if (const json& lnc = fieldAt(spec, {"config", "logicalNeuronCore"}); !lnc.is_null()) {
    if (!lnc.is_number_integer() ||
        (lnc.get<std::int64_t>() != 1 && lnc.get<std::int64_t>() != 2)) {
      error = "spec.config.logicalNeuronCore is not 1 or 2";
      return workload;
    }
    workload.logicalNeuronCore = lnc.get<int>();
  }
  if (workload.ref().size() > contracts::kMaxWorkloadIdLength) {
    error = "\"" + workload.ref() + "\" is longer than the " +
            std::to_string(contracts::kMaxWorkloadIdLength) +
            " characters a device attribute holds (workloadId): use a shorter name";
  }
  return workload;
}

json allocationEntry(const Allocation& allocation) {
  return {{"workloadRef", allocation.workloadRef},
          {"ultraserverIndex", allocation.ultraServerIndex},
          {"allocatedNodes", allocation.nodes},
          {"nodeCount", static_cast<int>(allocation.nodes.size())},
          {"leaderNodeName", allocation.leader()},
          {"phase", allocation.phase},
          {"allocatedAt", allocation.allocatedAt}};
}

std::vector<Allocation> allocationsOf(const json& ultraServerObject) {
  std::vector<Allocation> allocations;
  const json& items = fieldAt(ultraServerObject, {"status", "allocations"});
  if (!items.is_array()) return allocations;
  const std::string server = stringAt(ultraServerObject, {"metadata", "name"});
  for (const json& item : items) {
    if (!item.is_object()) continue;
    Allocation allocation;
    allocation.ultraServer = server;
    allocation.workloadRef = stringAt(item, {"workloadRef"});
    allocation.phase = stringAt(item, {"phase"});
    allocation.allocatedAt = stringAt(item, {"allocatedAt"});
    if (const json& index = item.value("ultraserverIndex", json()); index.is_number_integer()) {
      allocation.ultraServerIndex = index.get<int>();
    }
    if (const json& nodes = item.value("allocatedNodes", json()); nodes.is_array()) {
      for (const json& node : nodes) {
        if (node.is_string()) allocation.nodes.push_back(node.get<std::string>());
      }
    }
    if (allocation.workloadRef.empty() || allocation.nodes.empty()) continue;
    allocations.push_back(std::move(allocation));
  }
  return allocations;
}

}  // namespace torus::contracts
