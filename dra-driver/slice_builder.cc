#include "dra-driver/slice_builder.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/base/stable_hash.h"
#include "common/base/strings.h"
#include "common/base/version.h"
#include "common/contracts/dra_names.h"
#include "common/contracts/neuron_names.h"
#include "common/topology/allowed_shapes.h"
#include "common/topology/neuronlink_graph.h"

namespace torus::dra {
namespace {

using nlohmann::json;

// Validation caps of resource.k8s.io/v1 (kubernetes pkg/apis/resource/types.go).
constexpr std::size_t kMaxDevicesPerSlice = 128;
constexpr std::size_t kMaxDevicesWithAdvancedFeatures = 64;  // taints or counters
constexpr int kMaxCountersPerSet = 32;
constexpr std::size_t kMaxObjectNameLength = 253;

json intAttribute(std::int64_t value) {
  return {{"int", value}};
}
json stringAttribute(const std::string& value) {
  return {{"string", value}};
}
json versionAttribute(const std::string& value) {
  return {{"version", value}};
}

std::string quantityOfBytes(std::uint64_t bytes) {
  constexpr std::uint64_t kGi = 1ULL << 30;
  constexpr std::uint64_t kMi = 1ULL << 20;
  if (bytes != 0 && bytes % kGi == 0) return std::to_string(bytes / kGi) + "Gi";
  if (bytes != 0 && bytes % kMi == 0) return std::to_string(bytes / kMi) + "Mi";
  return std::to_string(bytes);
}

std::string labelOr(const std::map<std::string, std::string>& labels, const std::string& key) {
  const auto found = labels.find(key);
  return found == labels.end() ? std::string() : found->second;
}

// The driver's "2.24.7.0" as semantic version "2.24.7" (a version attribute must be semver);
// "" when it is not made of numbers.
std::string semverOf(const std::string& version) {
  std::vector<std::string> parts;
  std::string part;
  for (const char c : version + ".") {
    if (c == '.') {
      if (part.empty() || (part.size() > 1 && part[0] == '0')) return "";
      parts.push_back(part);
      part.clear();
    } else if (c >= '0' && c <= '9' && part.size() < 9) {
      part += c;
    } else {
      return "";
    }
  }
  while (parts.size() < 3)
    parts.push_back("0");
  return parts[0] + "." + parts[1] + "." + parts[2];
}

// Attributes a chip and each of its cores share.
json chipAttributes(const SliceInputs& in, int device) {
  const topology::Node& node = in.node;
  json attributes = {
      {"deviceId", intAttribute(device)},
      {"instanceType", stringAttribute(node.instanceType)},
      {"draDriverVersion", versionAttribute(driverSemver())},
      {"logicalNeuronCoreConfig", intAttribute(node.lnc)},
  };
  if (const std::string version = semverOf(node.driverVersion); !version.empty()) {
    attributes["neuronDriverVersion"] = versionAttribute(version);
  }
  if (node.interconnect == topology::Interconnect::kTorus2d && node.torusWidth > 0 &&
      !node.ultraServer) {
    const int row = device / node.torusWidth;
    attributes["topology_x"] = intAttribute(row);
    attributes["topology_y"] = intAttribute(device % node.torusWidth);
    attributes["topology4_id"] = intAttribute(row);
    attributes["topology8_id"] = intAttribute(row / 2);
  }
  for (const int size : {1, 4, 8, 16}) {
    const std::string id = deviceGroupId(in.nodeName, node, device, size);
    if (!id.empty()) {
      attributes["resource.aws.com/devicegroup" + std::to_string(size) + "_id"] =
          stringAttribute(id);
    }
  }
  for (int layer = 1; layer <= 3; ++layer) {
    const std::string value =
        labelOr(in.nodeLabels, contracts::kNetworkLayerLabelPrefix + std::to_string(layer));
    if (!value.empty()) {
      attributes["networkNodeLayer" + std::to_string(layer)] = stringAttribute(value);
    }
  }
  const topology::Device& facts = node.devices[static_cast<std::size_t>(device)];
  if (facts.numaNode) {
    attributes["resource.kubernetes.io/numaNode"] = intAttribute(*facts.numaNode);
  }
  if (!facts.pciBdf.empty()) {
    attributes["resource.kubernetes.io/pciBusID"] = stringAttribute(facts.pciBdf);
  }
  // Kubernetes' standard attribute (1.37): a claim asks for a chip and the network card under
  // the same root with matchAttribute, whatever driver publishes the card.
  if (!facts.pcieRoot.empty()) {
    attributes["resource.kubernetes.io/pcieRoot"] = stringAttribute(facts.pcieRoot);
  }
  // Which checks let a chip that faulted back in: a user can tell a chip whose memory was tested
  // from one that was only reset (the chart's read-only /sys).
  if (!facts.health.recoveredWith.empty()) {
    attributes["recoveredWith"] = stringAttribute(facts.health.recoveredWith);
  }
  return attributes;
}

// The API's limit on a device's taints before 1.35 (16 since).
constexpr std::size_t kMaxTaintsPerDevice = 4;

// A device's health taints: one per dimension with a fault (the first fault's code), then the
// unmonitored one; the legacy scheme's single taint instead where chosen.
json healthTaints(const SliceInputs& in, int device) {
  const topology::DeviceHealth& health = in.node.devices[static_cast<std::size_t>(device)].health;
  const HealthTaints& scheme = in.options.health;
  const auto since = in.unhealthySince.find(device);
  const auto stamped = [&](json taint) {
    if (since != in.unhealthySince.end() && !since->second.empty()) {
      taint["timeAdded"] = since->second;
    }
    return taint;
  };
  json taints = json::array();
  if (!health.healthy && scheme.legacy) {
    taints.push_back(stamped({{"key", std::string(kHealthTaintKey)},
                              {"value", legacyFaultKind(health)},
                              {"effect", scheme.effect}}));
  } else if (!health.healthy) {
    std::vector<std::string> keys;
    for (const topology::HealthProblem& problem : health.problems) {
      const std::string key = scheme.keyOf(topology::dimensionName(problem.dimension));
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      keys.push_back(key);
      // A chip waiting for its reset has no live fault: it is kept from new claims, but the
      // pods that tolerated its fault are not evicted now that the fault has gone.
      const bool recovering = problem.dimension == topology::HealthDimension::kRecovery;
      const std::string effect =
          recovering && scheme.effect == "NoExecute" ? "NoSchedule" : scheme.effect;
      taints.push_back(stamped(
          {{"key", key}, {"value", topology::healthCode(problem.code)}, {"effect", effect}}));
    }
  }
  const bool informational = scheme.unmonitoredEffect != "None" || in.options.noneEffect;
  if (!health.unmonitored.empty() && !scheme.unmonitoredEffect.empty() && informational) {
    taints.push_back(
        {{"key", scheme.keyOf(kUnmonitoredDimension)}, {"effect", scheme.unmonitoredEffect}});
  }
  return taints;
}

json counterConsumption(const std::vector<std::pair<int, int>>& unitsByChip) {
  json counters = json::object();
  for (const auto& [chip, units] : unitsByChip) {
    counters[chipCounterName(chip)] = {{"value", std::to_string(units)}};
  }
  return json::array({{{"counterSet", std::string(kCounterSetName)}, {"counters", counters}}});
}

json sliceObject(const SliceInputs& in, int index, std::int64_t generation, int sliceCount) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata",
           {{"name", sliceName(in.nodeName, index)},
            {"labels", {{"app.kubernetes.io/managed-by", "torus"}}}}},
          {"spec",
           {{"driver", std::string(kDriverName)},
            {"nodeName", in.nodeName},
            {"pool",
             {{"name", in.nodeName},
              {"generation", generation},
              {"resourceSliceCount", sliceCount}}}}}};
}

}  // namespace

std::string driverSemver() {
  const std::string_view full = versionString();
  return std::string(full.substr(0, full.find(' ')));
}

std::string sliceName(const std::string& nodeName, int index) {
  // Built by appending: GCC 12 at -O3 misreads `"-" + std::string` as an overlapping copy.
  std::string suffix(1, '-');
  suffix.append(kDriverName).append(1, '-').append(std::to_string(index));
  if (nodeName.size() + suffix.size() <= kMaxObjectNameLength) return nodeName + suffix;
  // A long node name keeps its start (for people) and gains a hash of the whole (for uniqueness).
  std::string name = nodeName.substr(0, kMaxObjectNameLength - suffix.size() - 17);
  name.append(1, '-').append(hex16(fnv1a64(nodeName))).append(suffix);
  return name;
}

std::string HealthTaints::keyOf(std::string_view dimension) const {
  const auto configured = keys.find(std::string(dimension));
  if (configured != keys.end() && !configured->second.empty()) return configured->second;
  return std::string(kDriverName) + "/" + std::string(dimension);
}

bool isHealthTaintDimension(std::string_view name) {
  if (name == kUnmonitoredDimension) return true;
  for (const topology::HealthDimension dimension : topology::kHealthDimensions) {
    if (topology::dimensionName(dimension) == name) return true;
  }
  return false;
}

Result<std::map<std::string, std::string>> parseHealthTaintKeys(std::string_view text) {
  std::map<std::string, std::string> keys;
  for (const std::string_view item : splitAndTrim(text, ',')) {
    const std::string entry(item);
    if (entry.empty()) continue;
    const std::size_t equals = entry.find('=');
    const std::string dimension = entry.substr(0, equals);
    if (equals == std::string::npos || !isHealthTaintDimension(dimension)) {
      return makeError(ErrorCode::kInvalidArgument,
                       "health taint keys: " + quoteJsonString(entry) +
                           ": expected DIMENSION=KEY with DIMENSION one of hardware-error, "
                           "ecc-uncorrected, device-lost, recovery, deep-check, unmonitored");
    }
    const std::string key = entry.substr(equals + 1);
    const std::size_t slash = key.find('/');
    const auto nameOk = [](std::string_view name, std::size_t max, bool dots) {
      if (name.empty() || name.size() > max || !std::isalnum(static_cast<unsigned char>(name[0])) ||
          !std::isalnum(static_cast<unsigned char>(name.back()))) {
        return false;
      }
      return std::all_of(name.begin(), name.end(), [&](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
               (!dots && c == '_');
      });
    };
    if (slash == std::string::npos || !nameOk(std::string_view(key).substr(0, slash), 253, true) ||
        !nameOk(std::string_view(key).substr(slash + 1), 63, false)) {
      return makeError(ErrorCode::kInvalidArgument,
                       "health taint keys: " + quoteJsonString(key) + " for " + dimension +
                           ": expected a qualified name with a domain (example.com/name)");
    }
    keys[dimension] = key;
  }
  return keys;
}

std::string legacyFaultKind(const topology::DeviceHealth& health) {
  using topology::HealthDimension;
  if (health.healthy || health.problems.empty()) return health.healthy ? "" : "Unhealthy";
  const topology::HealthProblem& first = health.problems.front();
  switch (first.dimension) {
    case HealthDimension::kHardwareError:
      return "KernelHardwareError";
    case HealthDimension::kEccUncorrected:
      return "UncorrectedECC";
    case HealthDimension::kRecovery:
      return first.code;  // Recovering, ResetFailed, SelfTestFailed
    case HealthDimension::kDeepCheck:
      return "DeepCheckFailed";
    case HealthDimension::kDeviceLost:
      if (first.code == "DeviceNodeMissing" || first.code == "DiscoveryFailed") return first.code;
      if (first.code == "ResetStateInvalid") return "ResetFailed";
      return "Unhealthy";
  }
  return "Unhealthy";
}

std::string deviceGroupId(const std::string& nodeName, const topology::Node& node, int device,
                          int size) {
  if (device < 0 || device >= node.deviceCount()) return "";
  if (size == 1) {
    const std::string& bdf = node.devices[static_cast<std::size_t>(device)].pciBdf;
    return bdf.empty() ? hex16(fnv1a64(nodeName + "/1/" + std::to_string(device))) : bdf;
  }
  // Groups are the allowed connected sets of that size that start on a multiple of it: disjoint,
  // so "equal id" is an equivalence, as matchAttribute needs.
  const topology::ShapeRules rules = topology::shapeRulesOf(node);
  for (const topology::DeviceSet& group : topology::allowedDeviceSets(rules, size)) {
    const std::vector<int> members = group.ids();
    if (members.empty() || members.front() % size != 0 || !group.contains(device)) continue;
    // A cut NeuronLink breaks the group: its devices get no id, so no claim takes them as one.
    if (!topology::NeuronLinkGraph::fromNode(node).isConnected(group)) return "";
    return hex16(
        fnv1a64(nodeName + "/" + std::to_string(size) + "/" + std::to_string(members.front())));
  }
  return "";
}

std::vector<nlohmann::json> buildSlices(const SliceInputs& in, std::int64_t generation) {
  const topology::Node& node = in.node;
  const int chips = node.deviceCount();
  const int coresPerChip = node.logicalCoresPerDevice();
  const bool countable = in.options.counters && chips > 0 && chips <= kMaxCountersPerSet;
  // Core devices only where counters keep a chip and its cores apart.
  const bool partitions = in.options.coreDevices && countable && coresPerChip > 0;
  // A chip's units in the counter set: its logical cores when they are devices too, else one.
  const int unitsPerChip = partitions ? coresPerChip : 1;
  const bool counters = countable && (partitions || node.ultraServer.has_value());
  const auto shown = [&](int chip) {
    return in.options.taints || node.devices[static_cast<std::size_t>(chip)].health.healthy;
  };
  // Computed once per chip: its cores and the node device carry the same.
  std::vector<json> chipTaints;
  for (int chip = 0; chip < chips; ++chip)
    chipTaints.push_back(in.options.taints ? healthTaints(in, chip) : json::array());
  const auto taintsOf = [&](int chip) { return chipTaints[static_cast<std::size_t>(chip)]; };

  // Computed once per chip: its cores share them, and the group ids walk the link graph.
  std::vector<json> sharedAttributes;
  for (int chip = 0; chip < chips; ++chip)
    sharedAttributes.push_back(chipAttributes(in, chip));

  std::vector<json> devices;
  for (int chip = 0; chip < chips; ++chip) {
    if (!shown(chip)) continue;
    const topology::Device& facts = node.devices[static_cast<std::size_t>(chip)];
    json attributes = sharedAttributes[static_cast<std::size_t>(chip)];
    attributes["resourceType"] = stringAttribute(std::string(kTypeDevice));
    json device = {{"name", chipDeviceName(chip)},
                   {"attributes", std::move(attributes)},
                   {"capacity",
                    {{"memory", {{"value", quantityOfBytes(facts.memoryBytes)}}},
                     {"neuronCores", {{"value", std::to_string(coresPerChip)}}}}}};
    if (counters) device["consumesCounters"] = counterConsumption({{chip, unitsPerChip}});
    if (json taints = taintsOf(chip); !taints.empty()) device["taints"] = std::move(taints);
    devices.push_back(std::move(device));
  }
  // The whole-node device (AWS's UltraServer claims ask for it) consumes every chip's units, so
  // it is never allocated beside one of them. Where the API keeps no counters
  // (DRAPartitionableDevices off: 1.34, 1.35) it is published all the same: the scheduler may then
  // allocate it and a chip to two claims, and the preparer refuses whichever comes second until
  // the first is released (that pod waits in ContainerCreating; docs/dra.md says so).
  if (node.ultraServer) {
    std::vector<std::pair<int, int>> all;
    json taints = json::array();
    bool hidden = false;
    for (int chip = 0; chip < chips; ++chip) {
      all.emplace_back(chip, unitsPerChip);
      if (!shown(chip)) hidden = true;
      // One taint per key: the first chip's value says what kind of fault (several chips may
      // have several).
      for (const json& taint : taintsOf(chip)) {
        const bool seen = std::any_of(taints.begin(), taints.end(), [&](const json& known) {
          return known["key"] == taint["key"];
        });
        if (!seen) taints.push_back(taint);
      }
    }
    if (!hidden) {
      json device = {
          {"name", std::string(kNodeDeviceName)},
          {"attributes",
           {{"resourceType", stringAttribute(std::string(kTypeNode))},
            {"instanceType", stringAttribute(node.instanceType)},
            {"draDriverVersion", versionAttribute(driverSemver())},
            {"ultraServerId4", stringAttribute(node.ultraServer->serverId4)},
            {"ultraServerNodeId4", intAttribute(node.ultraServer->nodeId4)}}},
          {"capacity", {{"neuronCores", {{"value", std::to_string(coresPerChip * chips)}}}}}};
      if (counters) device["consumesCounters"] = counterConsumption(all);
      if (!taints.empty()) device["taints"] = std::move(taints);
      devices.push_back(std::move(device));
    }
  }
  if (partitions) {
    for (int chip = 0; chip < chips; ++chip) {
      if (!shown(chip)) continue;
      for (int k = 0; k < coresPerChip; ++k) {
        const int core = chip * coresPerChip + k;
        json attributes = sharedAttributes[static_cast<std::size_t>(chip)];
        attributes["resourceType"] = stringAttribute(std::string(kTypeCore));
        attributes["coreId"] = intAttribute(core);
        json device = {{"name", coreDeviceName(core)},
                       {"attributes", std::move(attributes)},
                       {"capacity", {{"neuronCores", {{"value", "1"}}}}},
                       {"consumesCounters", counterConsumption({{chip, 1}})}};
        if (json taints = taintsOf(chip); !taints.empty()) device["taints"] = std::move(taints);
        devices.push_back(std::move(device));
      }
    }
  }

  // A node reserved for an UltraServer workload says so on every device: the workload's claim
  // template selects on it, and anyone may see whose the devices are.
  // Where the API keeps device taints, a NoSchedule taint that only the workload's template
  // tolerates keeps everyone else's claims off them (they wait unscheduled instead of being
  // refused at prepare).
  if (!in.reservedFor.empty() || !in.workloadId.empty()) {
    for (json& device : devices) {
      if (!in.workloadId.empty())
        device["attributes"][contracts::kWorkloadIdAttribute] = stringAttribute(in.workloadId);
      if (in.options.taints) {
        if (!device.contains("taints")) device["taints"] = json::array();
        device["taints"].push_back(
            {{"key", contracts::kReservedTaintKey}, {"effect", "NoSchedule"}});
      }
    }
  }

  // Within the API's limit, faults first: they keep claims off; the reservation next (it keeps
  // strangers off); the informational unmonitored taint last.
  for (json& device : devices) {
    if (!device.contains("taints")) continue;
    json& taints = device["taints"];
    std::stable_sort(taints.begin(), taints.end(), [](const json& a, const json& b) {
      return (a["effect"] == "None") < (b["effect"] == "None");
    });
    while (taints.size() > kMaxTaintsPerDevice)
      taints.erase(taints.size() - 1);
  }

  const bool advanced =
      counters || std::any_of(devices.begin(), devices.end(),
                              [](const json& device) { return device.contains("taints"); });
  const std::size_t perSlice = advanced ? kMaxDevicesWithAdvancedFeatures : kMaxDevicesPerSlice;
  const int deviceSlices =
      std::max<int>(1, static_cast<int>((devices.size() + perSlice - 1) / perSlice));
  const int sliceCount = deviceSlices + (counters ? 1 : 0);

  std::vector<json> slices;
  int index = 0;
  if (counters) {
    json chipCounters = json::object();
    for (int chip = 0; chip < chips; ++chip) {
      chipCounters[chipCounterName(chip)] = {{"value", std::to_string(unitsPerChip)}};
    }
    json slice = sliceObject(in, index++, generation, sliceCount);
    slice["spec"]["sharedCounters"] =
        json::array({{{"name", std::string(kCounterSetName)}, {"counters", chipCounters}}});
    slices.push_back(std::move(slice));
  }
  for (int part = 0; part < deviceSlices; ++part) {
    json slice = sliceObject(in, index++, generation, sliceCount);
    json chunk = json::array();
    for (std::size_t i = static_cast<std::size_t>(part) * perSlice;
         i < devices.size() && i < static_cast<std::size_t>(part + 1) * perSlice; ++i) {
      chunk.push_back(devices[i]);
    }
    slice["spec"]["devices"] = std::move(chunk);
    slices.push_back(std::move(slice));
  }
  return slices;
}

}  // namespace torus::dra
