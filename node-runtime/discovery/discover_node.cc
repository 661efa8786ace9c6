#include "node-runtime/discovery/discover_node.h"

#include <algorithm>
#include <map>

#include "common/base/strings.h"
#include "common/topology/neuronlink_graph.h"
#include "node-runtime/discovery/device_scan.h"
#include "node-runtime/discovery/lnc_config.h"
#include "node-runtime/discovery/pci_functions.h"
#include "node-runtime/discovery/sysfs_attribute.h"
#include "node-runtime/discovery/ultraserver.h"

namespace torus::discovery {
namespace {

using topology::InstanceType;

// The EC2 instance type. On Nitro instances the DMI product name is the instance type (the
// Neuron driver itself reads it to detect UltraServer nodes). Without it, the family the driver
// reports plus the device count narrows it down to one catalog row.
const InstanceType* identifyInstanceType(const DiscoveryRoots& roots,
                                         const DiscoveryOptions& options,
                                         const std::vector<DeviceFacts>& devices,
                                         Discovery& discovery) {
  if (options.instanceType) {
    discovery.node.instanceType = *options.instanceType;
    discovery.instanceTypeSource = "override";
    return topology::findInstanceType(*options.instanceType);
  }
  if (auto product = readParsed(roots.dmiProductName(), "product_name", parseName)) {
    discovery.node.instanceType = *product;
    discovery.instanceTypeSource = "dmi " + roots.dmiProductName().string();
    return topology::findInstanceType(*product);
  }
  std::string family;
  for (const DeviceFacts& device : devices) {
    if (!device.familyName.empty()) family = device.familyName;
  }
  for (const InstanceType& type : topology::allInstanceTypes()) {
    if (topology::architectureOf(type.generation).instanceType == family &&
        type.deviceCount == static_cast<int>(devices.size()) && !type.ultraServerNode) {
      discovery.node.instanceType = std::string(type.name);
      discovery.instanceTypeSource =
          "inferred from family " + family + " and " + std::to_string(devices.size()) + " devices";
      discovery.findings.push_back("cannot read " + roots.dmiProductName().string() +
                                   "; instance type inferred as " + std::string(type.name));
      return &type;
    }
  }
  discovery.node.instanceType = family.empty() ? "unknown" : family;
  discovery.instanceTypeSource = "unknown";
  return nullptr;
}

int mostCommonCoreCount(const std::vector<DeviceFacts>& devices) {
  std::map<int, int> votes;
  for (const DeviceFacts& device : devices) {
    if (device.coreCount) ++votes[*device.coreCount];
  }
  int best = 0;
  int bestVotes = 0;
  for (const auto& [count, n] : votes) {
    if (n > bestVotes) {
      best = count;
      bestVotes = n;
    }
  }
  return best;
}

// connected_devices is not link state: the driver prints a static table for the instance, and
// only when it counted a full set of devices while loading (v2/neuron_dhal_v2.c:645-720,
// v3/neuron_dhal_v3.c:885-940, the count sampled once, neuron_pci.c:385); otherwise every
// device prints "\n". So no device listing any neighbour on a type that has links means a
// device failed to load, not that every link is down: a node finding, and the type's wiring.
void useCatalogWiringIfTableEmpty(const InstanceType& type, std::size_t present,
                                  Discovery& discovery) {
  topology::Node& node = discovery.node;
  if (type.interconnect == topology::Interconnect::kNone || type.deviceCount < 2) return;
  for (const topology::Device& device : node.devices) {
    if (!device.connected.empty()) return;
  }
  discovery.findings.push_back(
      "no device lists a NeuronLink neighbour: the driver fills connected_devices only when "
      "every device of the node loaded, so a device failed to load (the driver has " +
      std::to_string(present) + " of " + std::to_string(type.deviceCount) + "); the devices keep " +
      std::string(type.name) + "'s wiring");
  for (topology::Device& device : node.devices)
    device.connected = topology::driverNeighbours(type, device.index);
}

void compareWithCatalog(const InstanceType& type, Discovery& discovery) {
  const topology::Node& node = discovery.node;
  const std::string name(type.name);
  if (node.deviceCount() != type.deviceCount) {
    discovery.findings.push_back(name + " should have " + std::to_string(type.deviceCount) +
                                 " devices, the driver reports " +
                                 std::to_string(node.deviceCount()));
    return;
  }
  for (const topology::Device& device : node.devices) {
    const std::vector<int> expected = topology::driverNeighbours(type, device.index);
    std::vector<int> got = device.connected;
    std::vector<int> want = expected;
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    if (got != want && device.health.healthy) {
      std::vector<std::string> gotText;
      std::vector<std::string> wantText;
      for (int d : device.connected)
        gotText.push_back(std::to_string(d));
      for (int d : expected)
        wantText.push_back(std::to_string(d));
      discovery.findings.push_back("neuron" + std::to_string(device.index) +
                                   ": connected_devices is \"" + joinStrings(gotText, ", ") +
                                   "\", " + name + " wires \"" + joinStrings(wantText, ", ") +
                                   "\"");
    }
  }
}

// Each device's PCI function as the driver places it (pci_functions.h), and what sysfs says of
// that function. A device the driver does not place keeps no PCI attributes at all.
void fillPciIdentity(const DiscoveryRoots& roots, const std::vector<int>& indices,
                     std::vector<DeviceFacts>& facts, Discovery& discovery) {
  NeuronPciMap map = mapNeuronPciFunctions(roots, indices);
  discovery.pciSource = map.source;
  for (std::string& finding : map.findings)
    discovery.findings.push_back(std::move(finding));
  for (DeviceFacts& fact : facts) {
    if (fact.pciBdf.empty()) {
      const auto placed = map.functionOf.find(fact.index);
      if (placed == map.functionOf.end()) continue;
      fact.pciBdf = placed->second;
    }
    const std::filesystem::path function = roots.sys / "bus" / "pci" / "devices" / fact.pciBdf;
    if (!fact.numaNode) fact.numaNode = numaNodeOfFunction(function);
    fact.pcieRoot = pcieRootOf(roots, fact.pciBdf);
    fact.cpuAffinity = cpuListOfFunction(function);
  }
}

}  // namespace

topology::DeviceHealth deviceHealthOf(const std::vector<std::string>& staticProblems,
                                      const VolatileHealth& volatileHealth) {
  topology::DeviceHealth health;
  for (const std::string& problem : staticProblems)
    health.add({topology::HealthDimension::kDeviceLost, "AttributeInvalid", problem});
  for (const topology::HealthProblem& problem : volatileHealth.problems)
    health.add(problem);
  // Each names its file ("reset state: ...", "stats/hardware/mem_ecc_uncorrected: ...").
  health.unmonitored = volatileHealth.unreadable;
  return health;
}

Result<Discovery> discoverNode(const DiscoveryRoots& roots, const DiscoveryOptions& options) {
  auto indices = listDeviceIndices(roots);
  if (!indices) return std::move(indices).error().withContext("discovering Neuron devices");
  if (indices->empty()) {
    return makeError(
        ErrorCode::kNotFound,
        "discovering Neuron devices: " + roots.neuronClass().string() + " has no neuronN entries");
  }
  // Device indices are dense on a healthy node; keep a slot for every index up to the highest so
  // that global core ids never shift when one device disappears from sysfs.
  int slots = indices->back() + 1;
  std::vector<DeviceFacts> facts;
  facts.reserve(static_cast<std::size_t>(slots));
  const auto missingDevice = [&](int index) {
    DeviceFacts missing;
    missing.index = index;
    missing.problems.push_back("neuron" + std::to_string(index) + " is missing from " +
                               roots.neuronClass().string());
    return missing;
  };
  for (int index = 0; index < slots; ++index) {
    facts.push_back(std::binary_search(indices->begin(), indices->end(), index)
                        ? scanDevice(roots, index)
                        : missingDevice(index));
  }

  Discovery discovery;
  fillPciIdentity(roots, *indices, facts, discovery);
  topology::Node& node = discovery.node;
  const InstanceType* type = identifyInstanceType(roots, options, facts, discovery);
  // The highest devices vanishing must not shrink a known node either: their slots stay, out of
  // service, and their neighbours keep pointing at devices the node has (shrinking would take a
  // device's healthy neighbours out with it).
  if (type != nullptr) {
    for (; slots < type->deviceCount; ++slots)
      facts.push_back(missingDevice(slots));
  }
  if (type == nullptr) {
    discovery.findings.push_back("instance type \"" + node.instanceType +
                                 "\" is not in the catalog; using what the driver reports");
  }
  node.catalog = type;
  node.interconnect = type != nullptr ? type->interconnect : topology::Interconnect::kNone;
  node.torusWidth = type != nullptr ? type->torusWidth : 0;
  node.physicalCoresPerDevice =
      type != nullptr ? type->physicalCoresPerDevice : mostCommonCoreCount(facts);

  auto lnc = chooseLnc(roots, type, options.lnc);
  if (!lnc) return std::move(lnc).error().withContext("discovering Neuron devices");
  if (node.physicalCoresPerDevice > 0 && node.physicalCoresPerDevice % lnc->lnc != 0) {
    return makeError(ErrorCode::kInvalidArgument,
                     "discovering Neuron devices: LNC " + std::to_string(lnc->lnc) +
                         " does not divide " + std::to_string(node.physicalCoresPerDevice) +
                         " cores per device");
  }
  node.lnc = lnc->lnc;
  discovery.lncSource = lnc->source;
  if (!lnc->warning.empty()) discovery.findings.push_back(lnc->warning);

  for (DeviceFacts& fact : facts) {
    topology::Device device;
    device.index = fact.index;
    device.physicalCores = fact.coreCount.value_or(0);
    device.memoryBytes = type != nullptr ? type->memoryBytesPerDevice : 0;
    device.connected = fact.connected.value_or(std::vector<int>{});
    device.numaNode = fact.numaNode;
    device.pciBdf = fact.pciBdf;
    device.pcieRoot = fact.pcieRoot;
    device.cpuAffinity = fact.cpuAffinity;
    device.serialNumber = fact.serialNumber;
    if (fact.coreCount && *fact.coreCount != node.physicalCoresPerDevice) {
      fact.problems.push_back("core_count is " + std::to_string(*fact.coreCount) + ", expected " +
                              std::to_string(node.physicalCoresPerDevice) + " for " +
                              node.instanceType);
    }
    for (const int neighbour : device.connected) {
      if (neighbour >= slots || neighbour == fact.index) {
        fact.problems.push_back("connected_devices names device " + std::to_string(neighbour) +
                                ", which this node does not have");
      }
    }
    discovery.staticProblems.push_back(fact.problems);
    device.health = deviceHealthOf(fact.problems, fact.volatileHealth);
    node.devices.push_back(std::move(device));
  }

  if (type != nullptr) useCatalogWiringIfTableEmpty(*type, indices->size(), discovery);
  if (type != nullptr) {
    const auto& names = topology::architectureOf(type->generation);
    for (const DeviceFacts& fact : facts) {
      if (!fact.archType.empty() && fact.archType != names.archType) {
        discovery.findings.push_back("neuron" + std::to_string(fact.index) + ": arch_type is " +
                                     fact.archType + ", " + node.instanceType + " has " +
                                     std::string(names.archType));
        break;
      }
    }
    compareWithCatalog(*type, discovery);
  }
  const auto graph = topology::NeuronLinkGraph::fromNode(node);
  for (const auto& [from, to] : graph.oneSidedLinks()) {
    discovery.findings.push_back("NeuronLink report is one-sided: neuron" + std::to_string(from) +
                                 " lists " + std::to_string(to) + " but neuron" +
                                 std::to_string(to) + " does not list " + std::to_string(from));
  }

  if (auto version = readParsed(roots.driverVersionFile(), "neuron module version", parseName)) {
    node.driverVersion = *version;
  }
  UltraServerReading ultra = readUltraServer(roots);
  node.ultraServer = std::move(ultra.position);
  for (std::string& problem : ultra.problems)
    discovery.findings.push_back(std::move(problem));
  return discovery;
}

}  // namespace torus::discovery
