#include "dra-driver/slice_builder.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "common/base/stable_hash.h"
#include "common/contracts/dra_names.h"
#include "dra-driver/device_attributes.h"

namespace torus::dra {
namespace {

using nlohmann::json;

// Validation caps of resource.k8s.io/v1 (kubernetes pkg/apis/resource/types.go).
constexpr std::size_t kMaxDevicesPerSlice = 128;
constexpr std::size_t kMaxDevicesWithAdvancedFeatures = 64;  // taints or counters
constexpr int kMaxCountersPerSet = 32;
constexpr std::size_t kMaxObjectNameLength = 253;

std::string quantityOfBytes(std::uint64_t bytes) {
  constexpr std::uint64_t kGi = 1ULL << 30;
  constexpr std::uint64_t kMi = 1ULL << 20;
  if (bytes != 0 && bytes % kGi == 0) return std::to_string(bytes / kGi) + "Gi";
  if (bytes != 0 && bytes % kMi == 0) return std::to_string(bytes / kMi) + "Mi";
  return std::to_string(bytes);
}

// What the options and the API allow this node's pool to hold, decided once for every device.
struct PoolLayout {
  int chips = 0;
  int coresPerChip = 0;
  bool partitions = false;  // core devices: only where counters keep a chip and its cores apart
  int unitsPerChip = 1;     // a chip's units in the counter set: its cores when they are devices
  bool counters = false;    // a counter set is published (partitions or an UltraServer node)
};

PoolLayout layoutOf(const SliceInputs& in) {
  PoolLayout layout;
  layout.chips = in.node.deviceCount();
  layout.coresPerChip = in.node.logicalCoresPerDevice();
  const bool countable =
      in.options.counters && layout.chips > 0 && layout.chips <= kMaxCountersPerSet;
  layout.partitions = in.options.coreDevices && countable && layout.coresPerChip > 0;
  layout.unitsPerChip = layout.partitions ? layout.coresPerChip : 1;
  layout.counters = countable && (layout.partitions || in.node.ultraServer.has_value());
  return layout;
}

// What each chip's devices share, computed once per chip: the chip, its cores and the node device
// carry the same taints, and the group ids in the attributes walk the link graph.
struct ChipFacts {
  bool shown = true;  // false: unhealthy where the API keeps no taints, so left out of the pool
  json taints = json::array();
  json attributes;
};

std::vector<ChipFacts> chipFactsOf(const SliceInputs& in, const PoolLayout& layout) {
  std::vector<ChipFacts> chips;
  for (int chip = 0; chip < layout.chips; ++chip) {
    const topology::DeviceHealth& health = in.node.devices[static_cast<std::size_t>(chip)].health;
    ChipFacts facts;
    facts.shown = in.options.taints || health.healthy;
    if (in.options.taints) {
      const auto since = in.unhealthySince.find(chip);
      facts.taints = deviceHealthTaints(
          health, in.options.health,
          since == in.unhealthySince.end() ? std::string() : since->second, in.options.noneEffect);
    }
    facts.attributes = chipAttributes(in.nodeName, in.node, in.nodeLabels, chip);
    chips.push_back(std::move(facts));
  }
  return chips;
}

json counterConsumption(const std::vector<std::pair<int, int>>& unitsByChip) {
  json counters = json::object();
  for (const auto& [chip, units] : unitsByChip) {
    counters[chipCounterName(chip)] = {{"value", std::to_string(units)}};
  }
  return json::array({{{"counterSet", std::string(kCounterSetName)}, {"counters", counters}}});
}

void appendChipDevices(const SliceInputs& in, const PoolLayout& layout,
                       const std::vector<ChipFacts>& chips, std::vector<json>& devices) {
  for (int chip = 0; chip < layout.chips; ++chip) {
    const ChipFacts& facts = chips[static_cast<std::size_t>(chip)];
    if (!facts.shown) continue;
    json attributes = facts.attributes;
    attributes["resourceType"] = stringAttribute(std::string(kTypeDevice));
    const std::uint64_t memory = in.node.devices[static_cast<std::size_t>(chip)].memoryBytes;
    json device = {{"name", chipDeviceName(chip)},
                   {"attributes", std::move(attributes)},
                   {"capacity",
                    {{"memory", {{"value", quantityOfBytes(memory)}}},
                     {"neuronCores", {{"value", std::to_string(layout.coresPerChip)}}}}}};
    if (layout.counters) {
      device["consumesCounters"] = counterConsumption({{chip, layout.unitsPerChip}});
    }
    if (!facts.taints.empty()) device["taints"] = facts.taints;
    devices.push_back(std::move(device));
  }
}

// The whole-node device (AWS's UltraServer claims ask for it) consumes every chip's units, so it
// is never allocated beside one of them. Where the API keeps no counters (DRAPartitionableDevices
// off: 1.34, 1.35) it is published all the same: the scheduler may then allocate it and a chip to
// two claims, and the preparer refuses whichever comes second until the first is released (that
// pod waits in ContainerCreating; docs/dra.md says so). None while a chip is left out of the pool.
std::optional<json> nodeDevice(const SliceInputs& in, const PoolLayout& layout,
                               const std::vector<ChipFacts>& chips) {
  const topology::Node& node = in.node;
  std::vector<std::pair<int, int>> all;
  json taints = json::array();
  for (int chip = 0; chip < layout.chips; ++chip) {
    const ChipFacts& facts = chips[static_cast<std::size_t>(chip)];
    if (!facts.shown) return std::nullopt;
    all.emplace_back(chip, layout.unitsPerChip);
    // One taint per key: the first chip's value says what kind of fault (several chips may have
    // several).
    for (const json& taint : facts.taints) {
      const bool seen = std::any_of(taints.begin(), taints.end(), [&](const json& known) {
        return known["key"] == taint["key"];
      });
      if (!seen) taints.push_back(taint);
    }
  }
  json device = {
      {"name", std::string(kNodeDeviceName)},
      {"attributes",
       {{"resourceType", stringAttribute(std::string(kTypeNode))},
        {"instanceType", stringAttribute(node.instanceType)},
        {"draDriverVersion", versionAttribute(driverSemver())},
        {"ultraServerId4", stringAttribute(node.ultraServer->serverId4)},
        {"ultraServerNodeId4", intAttribute(node.ultraServer->nodeId4)}}},
      {"capacity",
       {{"neuronCores", {{"value", std::to_string(layout.coresPerChip * layout.chips)}}}}}};
  if (layout.counters) device["consumesCounters"] = counterConsumption(all);
  if (!taints.empty()) device["taints"] = std::move(taints);
  return device;
}

void appendCoreDevices(const PoolLayout& layout, const std::vector<ChipFacts>& chips,
                       std::vector<json>& devices) {
  for (int chip = 0; chip < layout.chips; ++chip) {
    const ChipFacts& facts = chips[static_cast<std::size_t>(chip)];
    if (!facts.shown) continue;
    for (int k = 0; k < layout.coresPerChip; ++k) {
      const int core = chip * layout.coresPerChip + k;
      json attributes = facts.attributes;
      attributes["resourceType"] = stringAttribute(std::string(kTypeCore));
      attributes["coreId"] = intAttribute(core);
      json device = {{"name", coreDeviceName(core)},
                     {"attributes", std::move(attributes)},
                     {"capacity", {{"neuronCores", {{"value", "1"}}}}},
                     {"consumesCounters", counterConsumption({{chip, 1}})}};
      if (!facts.taints.empty()) device["taints"] = facts.taints;
      devices.push_back(std::move(device));
    }
  }
}

// A node reserved for an UltraServer workload says so on every device: the workload's claim
// template selects on it, and anyone may see whose the devices are.
// Where the API keeps device taints, a NoSchedule taint that only the workload's template
// tolerates keeps everyone else's claims off them (they wait unscheduled instead of being
// refused at prepare). Where it does not (1.34 and 1.35, or the gate off), nothing would keep
// a stranger's chip or core claim off the node, and one allocated there makes the reservation
// give way or its pod wait forever: only the node device, which the workload's template asks
// for, is published.
void markReservation(const SliceInputs& in, std::vector<json>& devices) {
  if (in.reservedFor.empty() && in.workloadId.empty()) return;
  if (!in.options.taints) {
    std::erase_if(devices, [](const json& device) {
      return device["attributes"]["resourceType"] != stringAttribute(std::string(kTypeNode));
    });
  }
  for (json& device : devices) {
    if (!in.workloadId.empty())
      device["attributes"][contracts::kWorkloadIdAttribute] = stringAttribute(in.workloadId);
    if (in.options.taints) {
      if (!device.contains("taints")) device["taints"] = json::array();
      device["taints"].push_back({{"key", contracts::kReservedTaintKey}, {"effect", "NoSchedule"}});
    }
  }
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

// The pool's slices: the counter set first in a slice of its own (where counters are kept), then
// the devices in order, as many to a slice as the API allows for what they use.
std::vector<json> packSlices(const SliceInputs& in, const PoolLayout& layout,
                             std::int64_t generation, const std::vector<json>& devices) {
  const bool advanced =
      layout.counters || std::any_of(devices.begin(), devices.end(),
                                     [](const json& device) { return device.contains("taints"); });
  const std::size_t perSlice = advanced ? kMaxDevicesWithAdvancedFeatures : kMaxDevicesPerSlice;
  const int deviceSlices =
      std::max<int>(1, static_cast<int>((devices.size() + perSlice - 1) / perSlice));
  const int sliceCount = deviceSlices + (layout.counters ? 1 : 0);

  std::vector<json> slices;
  int index = 0;
  if (layout.counters) {
    json chipCounters = json::object();
    for (int chip = 0; chip < layout.chips; ++chip) {
      chipCounters[chipCounterName(chip)] = {{"value", std::to_string(layout.unitsPerChip)}};
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

}  // namespace

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

std::vector<nlohmann::json> buildSlices(const SliceInputs& in, std::int64_t generation) {
  const PoolLayout layout = layoutOf(in);
  const std::vector<ChipFacts> chips = chipFactsOf(in, layout);
  // Devices in the order the slices list them: chips, the node device, cores.
  std::vector<json> devices;
  appendChipDevices(in, layout, chips, devices);
  if (in.node.ultraServer) {
    if (std::optional<json> node = nodeDevice(in, layout, chips)) devices.push_back(*node);
  }
  if (layout.partitions) appendCoreDevices(layout, chips, devices);
  markReservation(in, devices);
  for (json& device : devices) {
    if (device.contains("taints")) capTaints(device["taints"]);
  }
  return packSlices(in, layout, generation, devices);
}

}  // namespace torus::dra
