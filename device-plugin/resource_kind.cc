#include "device-plugin/resource_kind.h"

#include <algorithm>

#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/contracts/neuron_names.h"

namespace torus::plugin {
namespace {

constexpr ResourceKind kAllKinds[] = {ResourceKind::kNeuronCore, ResourceKind::kNeuron,
                                      ResourceKind::kNeuronDevice};

}  // namespace

std::string_view resourceName(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kNeuronCore:
      return contracts::kNeuronCoreResource;
    case ResourceKind::kNeuron:
      return contracts::kNeuronResource;
    case ResourceKind::kNeuronDevice:
      return contracts::kNeuronDeviceResource;
  }
  return "";
}

std::string socketName(ResourceKind kind) {
  const std::string_view name = resourceName(kind);
  return "torus-" + std::string(name.substr(name.find('/') + 1)) + ".sock";
}

topology::AllocationUnit unitOf(ResourceKind kind) {
  return kind == ResourceKind::kNeuronCore ? topology::AllocationUnit::kCore
                                           : topology::AllocationUnit::kDevice;
}

bool countsDevices(ResourceKind kind) {
  return kind != ResourceKind::kNeuronCore;
}

Result<std::vector<ResourceKind>> parseResourceList(std::string_view text) {
  std::vector<ResourceKind> kinds;
  for (std::string_view item : splitAndTrim(text, ',')) {
    if (item.empty()) continue;
    if (item.starts_with(contracts::kResourcePrefix)) {
      item.remove_prefix(contracts::kResourcePrefix.size());
    }
    const auto known =
        std::find_if(std::begin(kAllKinds), std::end(kAllKinds), [&](ResourceKind candidate) {
          return resourceName(candidate).substr(contracts::kResourcePrefix.size()) == item;
        });
    if (known == std::end(kAllKinds)) {
      return makeError(ErrorCode::kInvalidArgument,
                       "resources: unknown resource " + quoteJsonString(item) +
                           " (known: neuroncore, neuron, neurondevice)");
    }
    const ResourceKind kind = *known;
    for (const ResourceKind existing : kinds) {
      if (existing == kind) {
        return makeError(ErrorCode::kInvalidArgument,
                         "resources: " + std::string(item) + " listed twice");
      }
    }
    kinds.push_back(kind);
  }
  if (kinds.empty()) {
    return makeError(ErrorCode::kInvalidArgument, "resources: at least one resource is needed");
  }
  return kinds;
}

topology::CoreSet allIds(ResourceKind kind, const topology::Node& node) {
  return countsDevices(kind) ? node.allDevices() : node.allCores();
}

topology::CoreSet healthyIds(ResourceKind kind, const topology::Node& node) {
  const topology::DeviceSet healthy = node.healthyDevices();
  return countsDevices(kind) ? healthy : node.coresOfDevices(healthy);
}

topology::CoreSet coresOfIds(ResourceKind kind, const topology::Node& node,
                             const topology::CoreSet& ids) {
  return countsDevices(kind) ? node.coresOfDevices(ids) : ids & node.allCores();
}

Result<topology::CoreSet> parseIds(ResourceKind kind, const topology::Node& node,
                                   const std::vector<std::string>& ids) {
  const topology::CoreSet valid = allIds(kind, node);
  topology::CoreSet parsed;
  std::vector<std::string> unknown;
  std::vector<std::string> duplicate;
  for (const std::string& id : ids) {
    auto value = parseInt(id, 0, topology::CoreSet::kCapacity - 1);
    // Decimal ids only: "007" or "+7" would name the same device twice under two spellings.
    if (!value || std::to_string(*value) != id || !valid.contains(*value)) {
      unknown.push_back(quoteJsonString(clipForMessage(id, 70)));
    } else if (parsed.contains(*value)) {
      duplicate.push_back(id);
    } else {
      parsed.insert(*value);
    }
  }
  if (!unknown.empty() || !duplicate.empty()) {
    std::string message = std::string(resourceName(kind)) + ":";
    if (!unknown.empty()) {
      message += " unknown ids " + joinFirst(unknown, ", ") + " (this node has " +
                 valid.toRangeString() + ")";
    }
    if (!duplicate.empty()) {
      message +=
          std::string(unknown.empty() ? "" : ";") + " duplicate ids " + joinFirst(duplicate, ", ");
    }
    return makeError(ErrorCode::kInvalidArgument, message);
  }
  return parsed;
}

std::vector<std::string> formatIds(const topology::CoreSet& ids) {
  std::vector<std::string> text;
  ids.forEach([&](int id) { text.push_back(std::to_string(id)); });
  return text;
}

}  // namespace torus::plugin
