#include "node-runtime/simulator/sim_pci_layout.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

namespace torus::simulator {
namespace {

using topology::Generation;
using topology::InstanceType;

std::string bdfText(int domain, int bus, int slot) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "%04x:%02x:%02x.0", domain & 0xffff, bus & 0xff,
                slot & 0x1f);
  return buffer;
}

std::string rootText(int domain, int bus) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "pci%04x:%02x", domain & 0xffff, bus & 0xff);
  return buffer;
}

// AWS's neuron-ls on a trn2n.48xlarge (tools/neuron-sys-tools/neuron-ls.rst): device index ->
// bus (every function is at slot 00.0) and NUMA node.
struct PublishedTrn2Device {
  int bus;
  int numaNode;
};
constexpr std::array<PublishedTrn2Device, 16> kPublishedTrn2 = {{
    {0xcc, 1},
    {0xb5, 1},
    {0xb6, 1},
    {0xcb, 1},
    {0x6f, 0},
    {0x58, 0},
    {0x59, 0},
    {0x6e, 0},
    {0x9b, 0},
    {0x84, 0},
    {0x85, 0},
    {0x9a, 0},
    {0xf8, 1},
    {0xe1, 1},
    {0xe2, 1},
    {0xf7, 1},
}};
constexpr std::array<std::string_view, 2> kPublishedTrn2CpuLists = {"0-47,96-143", "48-95,144-191"};

// AWS's lspci -tv of a trn1.32xlarge (neuron-runtime/nrt-troubleshoot.rst): four root buses, each
// with EFAs at slots 19 and 1a and Neuron devices at slots 1b-1e.
constexpr std::array<int, 4> kPublishedTrn1Roots = {0x10, 0x20, 0x90, 0xa0};
constexpr int kFirstNeuronSlot = 0x1b;
constexpr int kChipsPerRoot = 4;

// vCPUs of each type (AWS's EC2 instance type pages), for the CPU lists of assumed layouts.
int vcpusOf(std::string_view type) {
  constexpr std::pair<std::string_view, int> kVcpus[] = {
      {"inf1.xlarge", 4},  {"inf1.2xlarge", 8},    {"inf1.6xlarge", 24},   {"inf1.24xlarge", 96},
      {"inf2.xlarge", 4},  {"inf2.8xlarge", 32},   {"inf2.24xlarge", 96},  {"inf2.48xlarge", 192},
      {"trn1.2xlarge", 8}, {"trn1.32xlarge", 128}, {"trn1n.32xlarge", 128}};
  for (const auto& [name, vcpus] : kVcpus) {
    if (name == type) return vcpus;
  }
  return 8;
}

// The CPUs local to NUMA node `node` of `nodes`, as the published trn2 shows them: each node its
// share of the first half of the CPUs and the same share of the second (hyperthread siblings).
std::string cpuListOf(int vcpus, int nodes, int node) {
  const int half = vcpus / 2;
  const int share = half / std::max(nodes, 1);
  if (share == 0) return "0-" + std::to_string(vcpus - 1);
  const auto range = [](int from, int count) {
    return std::to_string(from) + "-" + std::to_string(from + count - 1);
  };
  return range(node * share, share) + "," + range(half + node * share, share);
}

SimulatedPciLayout publishedTrn2(const InstanceType& type, int domain) {
  SimulatedPciLayout layout;
  layout.source =
      "published: AWS's neuron-ls on a trn2n.48xlarge (index, BDF, NUMA, CPUs); the "
      "PCIe roots and EFA functions are assumed";
  for (int index = 0; index < static_cast<int>(kPublishedTrn2.size()); ++index) {
    const PublishedTrn2Device& device = kPublishedTrn2[static_cast<std::size_t>(index)];
    SimulatedNeuronFunction function;
    function.bdf = bdfText(domain, device.bus, 0);
    function.index = index;
    const auto routing =
        std::find(kTrn2RoutingIdToIndex.begin(), kTrn2RoutingIdToIndex.end(), index);
    function.routingId = static_cast<int>(routing - kTrn2RoutingIdToIndex.begin());
    function.numaNode = device.numaNode;
    function.cpuList =
        std::string(kPublishedTrn2CpuLists[static_cast<std::size_t>(device.numaNode)]);
    // Assumed: the four devices that share a range of buses (and a CPU affinity) share a root,
    // named one below the range's lowest bus; its EFAs sit on the root bus.
    const int group = index / kChipsPerRoot;
    int lowest = 0xff;
    for (int member = group * kChipsPerRoot; member < (group + 1) * kChipsPerRoot; ++member) {
      lowest = std::min(lowest, kPublishedTrn2[static_cast<std::size_t>(member)].bus);
    }
    function.root = rootText(domain, lowest - 1);
    layout.neuron.push_back(std::move(function));
  }
  const int efaPerRoot = type.efaInterfaces / 4;
  for (int group = 0; group < 4; ++group) {
    const SimulatedNeuronFunction& first = layout.neuron[static_cast<std::size_t>(group * 4)];
    const int rootBus = std::stoi(first.root.substr(first.root.find(':') + 1), nullptr, 16);
    for (int efa = 0; efa < efaPerRoot; ++efa) {
      layout.efa.push_back({bdfText(domain, rootBus, kFirstNeuronSlot - efaPerRoot + efa),
                            first.root, first.numaNode});
    }
  }
  return layout;
}

// The trn1.32xlarge pattern: chips in groups of four per root at slots 1b-1e, the root's EFAs
// just below them.
SimulatedPciLayout rootsOfFour(const InstanceType& type, bool published, int domain) {
  SimulatedPciLayout layout;
  const int roots = (type.deviceCount + kChipsPerRoot - 1) / kChipsPerRoot;
  const int vcpus = vcpusOf(type.name);
  layout.source = published ? "published: AWS's lspci of a trn1.32xlarge (roots, slots, EFAs); "
                              "routing ids in address order, NUMA nodes and CPUs assumed"
                            : "assumed: the published trn1.32xlarge pattern (four chips per "
                              "root at slots 1b-1e, the root's EFAs below them), routing ids in "
                              "address order";
  // trn1's published roots; other types' roots are assumed on buses of their own (0x30, 0x40,
  // ...), so no two types in one family of layouts share a function.
  std::vector<int> rootBuses;
  const bool trn1 = type.generation == Generation::kTrn1;
  for (int root = 0; root < roots; ++root) {
    rootBuses.push_back(trn1 && root < static_cast<int>(kPublishedTrn1Roots.size())
                            ? kPublishedTrn1Roots[static_cast<std::size_t>(root)]
                            : 0x30 + 0x10 * root);
  }
  // Address order: roots by bus, then slots.
  std::sort(rootBuses.begin(), rootBuses.end());
  for (int position = 0; position < type.deviceCount; ++position) {
    const int root = position / kChipsPerRoot;
    const int bus = rootBuses[static_cast<std::size_t>(root)];
    SimulatedNeuronFunction function;
    function.bdf = bdfText(domain, bus, kFirstNeuronSlot + position % kChipsPerRoot);
    function.root = rootText(domain, bus);
    function.routingId = position;
    function.index = driverDeviceIndex(type.generation, position);
    function.numaNode = root * type.numaNodes / roots;
    function.cpuList = cpuListOf(vcpus, type.numaNodes, function.numaNode);
    layout.neuron.push_back(std::move(function));
  }
  const int efaPerRoot = type.efaInterfaces == 0 ? 0 : std::max(1, type.efaInterfaces / roots);
  for (int root = 0; root < roots && static_cast<int>(layout.efa.size()) < type.efaInterfaces;
       ++root) {
    const int bus = rootBuses[static_cast<std::size_t>(root)];
    for (int efa = 0; efa < efaPerRoot; ++efa) {
      layout.efa.push_back({bdfText(domain, bus, kFirstNeuronSlot - efaPerRoot + efa),
                            rootText(domain, bus), root * type.numaNodes / roots});
    }
  }
  return layout;
}

}  // namespace

int driverDeviceIndex(Generation generation, int routingId) {
  const auto permuted = [routingId](const std::array<int, 16>& table) {
    return table[static_cast<std::size_t>(routingId % 16)] + routingId / 16 * 16;
  };
  switch (generation) {
    case Generation::kTrn1:
      return permuted(kTrn1RoutingIdToIndex);
    case Generation::kTrn2:
      return permuted(kTrn2RoutingIdToIndex);
    case Generation::kInf1:
    case Generation::kInf2:
      return routingId;
  }
  return routingId;
}

const SimulatedNeuronFunction* SimulatedPciLayout::functionOfDevice(int index) const {
  for (const SimulatedNeuronFunction& function : neuron) {
    if (function.index == index) return &function;
  }
  return nullptr;
}

SimulatedPciLayout simulatedPciLayout(const InstanceType& type, int domain) {
  SimulatedPciLayout layout = type.generation == Generation::kTrn2 && type.deviceCount == 16
                                  ? publishedTrn2(type, domain)
                                  : rootsOfFour(type, type.name == "trn1.32xlarge", domain);
  std::sort(layout.neuron.begin(), layout.neuron.end(),
            [](const auto& a, const auto& b) { return a.bdf < b.bdf; });
  return layout;
}

std::string driverProbeLine(Generation generation, const SimulatedNeuronFunction& f) {
  if (generation == Generation::kInf1) return "";
  // "%2.2x:%2.2x.%x": bus, slot and function without the domain.
  const std::string busSlotFunction = f.bdf.substr(f.bdf.find(':') + 1);
  const std::string line = "** BDF: " + busSlotFunction + " => nd[" + std::to_string(f.index) +
                           "] (routing id: " + std::to_string(f.routingId) + ")";
  if (generation == Generation::kTrn2) return "neuron:neuron_pci_get_device_id_v3: " + line;
  return line;
}

// The kernel log as the driver leaves it after loading: one KERN_ERR line per device probed, in
// probe order, as /dev/kmsg records ("3,SEQ,USEC,-;text").
std::string driverLoadLog(const InstanceType& type, const SimulatedPciLayout& layout) {
  std::string log;
  int sequence = 0;
  for (const SimulatedNeuronFunction& function : layout.neuron) {
    const std::string line = driverProbeLine(type.generation, function);
    if (line.empty()) continue;
    log += "3," + std::to_string(sequence) + "," + std::to_string(4'000'000 + sequence * 1000) +
           ",-;" + line + "\n";
    ++sequence;
  }
  return log;
}

}  // namespace torus::simulator
