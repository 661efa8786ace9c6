// The simulator against what AWS published from real instances (tests/fixtures/published): the
// simulated trn2 read back by the real discovery code must give AWS's neuron-ls, device for
// device (index, PCI BDF, CPU affinity, NUMA node, connected devices), and the simulated
// trn1.32xlarge must have AWS's lspci tree (roots, slots, EFAs). Either failing means the
// simulator no longer is the node AWS ships.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/strings.h"
#include "common/base/temp_dir.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  auto text =
      readSmallFile(std::string(TORUS_SOURCE_DIR) + "/tests/fixtures/published/" + name, 1 << 20);
  EXPECT_TRUE(text.ok()) << name;
  return text ? *text : "";
}

Result<discovery::Discovery> discoverSimulated(const std::string& type, const fs::path& dir) {
  simulator::SimulationSpec spec;
  spec.instanceType = type;
  spec.characterDevices = false;
  auto tree = simulator::writeSimulatedTree(spec, dir);
  if (!tree) return std::move(tree).error();
  return discovery::discoverNode(tree->roots(), {});
}

struct PublishedDevice {
  int index = 0;
  std::string connected;
  std::string bdf;
  std::string cpuAffinity;
  int numaNode = 0;
};

// The rows of neuron-ls's table: "| 0 | 4 | 0-3 | 96 GB | 12, 3, 4, 1 | 0000:cc:00.0 | ... |".
std::vector<PublishedDevice> publishedTable(const std::string& text) {
  std::vector<PublishedDevice> devices;
  for (const std::string_view line : splitAndTrim(text, '\n')) {
    if (!line.starts_with("|")) continue;
    const std::vector<std::string_view> cells = splitAndTrim(line, '|');
    // cells[0] is before the first '|'.
    if (cells.size() < 9 || cells[1].empty() || !std::isdigit(cells[1].front())) continue;
    devices.push_back({std::stoi(std::string(cells[1])), std::string(cells[5]),
                       std::string(cells[6]), std::string(cells[7]),
                       std::stoi(std::string(cells[8]))});
  }
  return devices;
}

// The neighbours as a set: neuron-ls lists them in another order than the driver's sysfs table
// prints them (neuron0: "12, 3, 4, 1" against the table's {12, 1, 3, 4},
// v3/neuron_dhal_v3.c:886), the same four devices.
std::set<int> neighbours(std::string_view text) {
  std::set<int> set;
  for (const std::string_view item : splitAndTrim(text, ','))
    set.insert(std::stoi(std::string(item)));
  return set;
}

TEST(PublishedLayout, SimulatedTrn2GivesAwsNeuronLs) {
  const std::vector<PublishedDevice> published =
      publishedTable(fixture("trn2n.48xlarge-neuron-ls.txt"));
  ASSERT_EQ(published.size(), 16U);
  // The published layout is a trn2n's; the only one AWS published for the trn2 family.
  for (const char* type : {"trn2.48xlarge", "trn2u.48xlarge"}) {
    auto dir = TempDir::create("published-layout");
    ASSERT_TRUE(dir.ok());
    auto found = discoverSimulated(type, dir->path());
    ASSERT_TRUE(found.ok()) << found.error().message;
    EXPECT_EQ(found->pciSource, "kernel log") << "the driver's load lines place the devices";
    EXPECT_TRUE(found->findings.empty()) << found->findings.front();
    const topology::Node& node = found->node;
    ASSERT_EQ(node.deviceCount(), 16);
    for (const PublishedDevice& want : published) {
      const topology::Device& got = node.devices[static_cast<std::size_t>(want.index)];
      EXPECT_EQ(got.pciBdf, want.bdf) << type << " neuron" << want.index;
      EXPECT_EQ(got.cpuAffinity, want.cpuAffinity) << type << " neuron" << want.index;
      EXPECT_EQ(got.numaNode, want.numaNode) << type << " neuron" << want.index;
      EXPECT_EQ(std::set<int>(got.connected.begin(), got.connected.end()),
                neighbours(want.connected))
          << type << " neuron" << want.index;
      EXPECT_FALSE(got.pcieRoot.empty()) << type << " neuron" << want.index;
    }
  }
}

struct PublishedRoot {
  std::set<std::string> neuronSlots;
  std::set<std::string> efaSlots;
};

// "-+-[0000:a0]-+-00.0  Amazon.com, Inc. Elastic Network Adapter (ENA)" and the lines after it.
std::map<std::string, PublishedRoot> publishedLspci(const std::string& text) {
  std::map<std::string, PublishedRoot> roots;
  std::string root;
  for (const std::string_view line : splitAndTrim(text, '\n')) {
    if (const std::size_t open = line.find("[0000:"); open != std::string_view::npos) {
      root = "pci" + std::string(line.substr(open + 1, 7));
    }
    const std::size_t slotEnd = line.find(".0  ");
    if (root.empty() || slotEnd == std::string_view::npos || slotEnd < 2) continue;
    const std::string slot(line.substr(slotEnd - 2, 4));
    if (line.find("NeuronDevice") != std::string_view::npos) roots[root].neuronSlots.insert(slot);
    if (line.find("(EFA)") != std::string_view::npos) roots[root].efaSlots.insert(slot);
  }
  return roots;
}

TEST(PublishedLayout, SimulatedTrn1HasAwsLspciTree) {
  std::map<std::string, PublishedRoot> published =
      publishedLspci(fixture("trn1.32xlarge-lspci-tv.txt"));
  std::erase_if(published, [](const auto& root) { return root.second.neuronSlots.empty(); });
  ASSERT_EQ(published.size(), 4U);
  auto dir = TempDir::create("published-layout");
  ASSERT_TRUE(dir.ok());
  auto found = discoverSimulated("trn1.32xlarge", dir->path());
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_TRUE(found->findings.empty()) << found->findings.front();

  // What the simulated sysfs holds under each root: functions by vendor:device.
  const fs::path sys = dir->path() / "sys";
  std::map<std::string, PublishedRoot> simulated;
  for (const fs::directory_entry& root : fs::directory_iterator(sys / "devices")) {
    const std::string name = root.path().filename().string();
    if (!name.starts_with("pci")) continue;
    for (const fs::directory_entry& function : fs::directory_iterator(root.path())) {
      const std::string bdf = function.path().filename().string();
      auto device = readSmallFile(function.path() / "device");
      ASSERT_TRUE(device.ok()) << bdf;
      const std::string slot = bdf.substr(8, 4);
      if (trim(*device) == "0xefa1") {
        simulated[name].efaSlots.insert(slot);
      } else {
        simulated[name].neuronSlots.insert(slot);
      }
    }
  }
  ASSERT_EQ(simulated.size(), published.size());
  for (const auto& [root, want] : published) {
    EXPECT_EQ(simulated[root].neuronSlots, want.neuronSlots) << root;
    EXPECT_EQ(simulated[root].efaSlots, want.efaSlots) << root;
  }
  // Every chip reads back on its root, and the four chips of a root share it with its EFAs.
  std::map<std::string, int> chipsPerRoot;
  for (const topology::Device& device : found->node.devices) {
    ASSERT_FALSE(device.pciBdf.empty()) << "neuron" << device.index;
    ++chipsPerRoot[device.pcieRoot];
  }
  for (const auto& [root, chips] : chipsPerRoot)
    EXPECT_EQ(chips, 4) << root;
  // Not numbered in address order: the driver's trn1 table maps routing ids 0..15.
  EXPECT_EQ(found->node.devices[1].pciBdf, "0000:10:1d.0");
  EXPECT_EQ(found->node.devices[4].pciBdf, "0000:10:1c.0");
}

}  // namespace
}  // namespace torus
