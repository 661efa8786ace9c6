// The simulator's tree for every catalog type, read back by the real discovery code, must give
// exactly the catalog's model: device count, cores at each LNC, adjacency in the driver's order,
// memory, all healthy, nothing to report.
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/base/temp_dir.h"
#include "common/config/settings.h"
#include "common/topology/neuronlink_graph.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/discovery/pci_functions.h"
#include "node-runtime/health/kernel_log.h"
#include "node-runtime/node_source/node_source.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus {
namespace {

struct Case {
  std::string type;
  int lnc;
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.type << " lnc=" << c.lnc;
}

std::vector<Case> everyTypeAndLnc() {
  std::vector<Case> cases;
  for (const auto& type : topology::allInstanceTypes()) {
    for (int lnc = 1; lnc <= type.maxLnc; ++lnc)
      cases.push_back({std::string(type.name), lnc});
  }
  return cases;
}

class SimulatedDiscoveryTest : public ::testing::TestWithParam<Case> {};

TEST_P(SimulatedDiscoveryTest, DiscoversExactlyTheCatalogModel) {
  const Case& c = GetParam();
  auto dir = TempDir::create("sim-discovery");
  ASSERT_TRUE(dir.ok());
  simulator::SimulationSpec spec;
  spec.instanceType = c.type;
  spec.lnc = c.lnc;
  auto tree = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(tree.ok()) << tree.error().message;

  auto found = discovery::discoverNode(tree->roots(), {});
  ASSERT_TRUE(found.ok()) << found.error().message;
  const topology::Node expected = *topology::catalogNode(c.type, c.lnc);
  const topology::Node& node = found->node;
  EXPECT_TRUE(found->findings.empty()) << found->findings.front();
  EXPECT_EQ(node.instanceType, c.type);
  EXPECT_EQ(node.lnc, c.lnc);
  EXPECT_EQ(node.deviceCount(), expected.deviceCount());
  EXPECT_EQ(node.logicalCoreCount(), expected.logicalCoreCount());
  EXPECT_EQ(node.interconnect, expected.interconnect);
  EXPECT_EQ(node.memoryBytes(), expected.memoryBytes());
  ASSERT_EQ(node.devices.size(), expected.devices.size());
  for (std::size_t i = 0; i < node.devices.size(); ++i) {
    const topology::Device& device = node.devices[i];
    EXPECT_EQ(device.index, static_cast<int>(i));  // numeric order: neuron10 after neuron9
    EXPECT_EQ(device.connected, expected.devices[i].connected) << "neuron" << i;
    EXPECT_EQ(device.physicalCores, expected.devices[i].physicalCores);
    EXPECT_TRUE(device.health.healthy) << device.health.reason;
  }
  EXPECT_TRUE(topology::NeuronLinkGraph::fromNode(node).isSymmetric());
  EXPECT_EQ(node.ultraServer.has_value(), expected.catalog->ultraServerNode);
  // The driver's PCI driver is "neuron-driver" (only the module is "neuron"), and the driver
  // places every device, through its load lines (inf1: in probe order).
  const std::filesystem::path drivers = tree->roots().sys / "bus" / "pci" / "drivers";
  EXPECT_TRUE(std::filesystem::is_directory(drivers / "neuron-driver"));
  EXPECT_FALSE(std::filesystem::exists(drivers / "neuron"));
  EXPECT_FALSE(found->pciSource.empty());
  for (const topology::Device& device : node.devices) {
    EXPECT_FALSE(device.pciBdf.empty()) << "neuron" << device.index;
    EXPECT_TRUE(device.numaNode.has_value()) << "neuron" << device.index;
  }
}

INSTANTIATE_TEST_SUITE_P(Catalog, SimulatedDiscoveryTest, ::testing::ValuesIn(everyTypeAndLnc()),
                         [](const auto& param) {
                           std::string name =
                               param.param.type + "_lnc" + std::to_string(param.param.lnc);
                           for (char& ch : name) {
                             if (ch == '.') ch = '_';
                           }
                           return name;
                         });

// The four nodes of a simulated UltraServer read as the driver reports a 4-node election: one
// server_id_4 with node ids 0-3; pairs over the vertical links {0,1} and {2,3}, each with its own
// server_id_2 and node ids 0 and 1 inside it (what AWS's UltraServer init script checks); modes
// X4, X2V and X1 (the driver offers X2H only after a 2-node election).
TEST(SimulatedDiscovery, UltraServerPositionComesFromClassAttributes) {
  std::vector<topology::UltraServerPosition> positions;
  for (int nodeId = 0; nodeId < 4; ++nodeId) {
    auto dir = TempDir::create("sim-discovery");
    simulator::SimulationSpec spec;
    spec.instanceType = "trn2u.48xlarge";
    spec.ultraServerNodeId = nodeId;
    auto tree = simulator::writeSimulatedTree(spec, dir->path());
    ASSERT_TRUE(tree.ok()) << tree.error().message;
    auto found = discovery::discoverNode(tree->roots(), {});
    ASSERT_TRUE(found.ok());
    ASSERT_TRUE(found->node.ultraServer.has_value());
    positions.push_back(*found->node.ultraServer);
  }
  for (int nodeId = 0; nodeId < 4; ++nodeId) {
    const auto& position = positions[static_cast<std::size_t>(nodeId)];
    EXPECT_EQ(position.nodeId4, nodeId);
    EXPECT_EQ(position.nodeId2, nodeId % 2) << "node " << nodeId;
    EXPECT_EQ(position.serverId4, positions[0].serverId4);
    EXPECT_EQ(position.serverId2, positions[nodeId < 2 ? 0 : 2].serverId2);
    EXPECT_EQ(position.supportedModes, (std::vector<int>{1, 3, 4}));
  }
  EXPECT_FALSE(positions[0].serverId4.empty());
  EXPECT_NE(positions[0].serverId2, positions[2].serverId2);
}

// Nodes of two simulated UltraServers, placed with --simulate-ultraserver=SERIAL:POSITION as the
// local cluster places them: each UltraServer's nodes agree on its serial and differ from the
// other's, and no two nodes report the same chip serial number.
TEST(SimulatedDiscovery, UltraServerSettingPlacesNodesInTheirOwnUltraServer) {
  std::set<std::string> chipSerials;
  std::set<std::string> serverIds;
  for (const char* place : {"a11ce:0", "a11ce:3", "b0b:0"}) {
    auto dir = TempDir::create("sim-discovery");
    config::SettingTable table("test");
    node_source::NodeSourceOptions options;
    node_source::addNodeSourceSettings(table, &options);
    auto parsed =
        table.parse({"--simulate=trn2u.48xlarge", "--simulate-dir=" + dir->path().string(),
                     std::string("--simulate-ultraserver=") + place},
                    [](std::string_view) { return std::nullopt; });
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    auto prepared = node_source::prepareNode(options);
    ASSERT_TRUE(prepared.ok()) << prepared.error().message;
    auto found = discovery::discoverNode(prepared->roots, {});
    ASSERT_TRUE(found.ok());
    ASSERT_TRUE(found->node.ultraServer.has_value());
    EXPECT_EQ(found->node.ultraServer->nodeId4, options.ultraServerPosition) << place;
    serverIds.insert(found->node.ultraServer->serverId4);
    for (const auto& device : found->node.devices) {
      EXPECT_TRUE(chipSerials.insert(device.serialNumber).second) << device.serialNumber;
    }
  }
  EXPECT_EQ(serverIds.size(), 2u);
  EXPECT_TRUE(serverIds.contains("00000000000a11ce")) << *serverIds.begin();
}

// A place outside an UltraServer, or a malformed one, is refused with the reason.
TEST(SimulatedDiscovery, UltraServerSettingRefusesWhatNoDriverWouldReport) {
  const auto attempt = [](std::vector<std::string> args) {
    auto dir = TempDir::create("sim-discovery");
    config::SettingTable table("test");
    node_source::NodeSourceOptions options;
    node_source::addNodeSourceSettings(table, &options);
    args.push_back("--simulate-dir=" + dir->path().string());
    auto parsed = table.parse(args, [](std::string_view) { return std::nullopt; });
    if (!parsed.ok()) return parsed.error().message;
    auto prepared = node_source::prepareNode(options);
    return prepared.ok() ? std::string() : prepared.error().message;
  };
  EXPECT_THAT(attempt({"--simulate=trn2.48xlarge", "--simulate-ultraserver=a11ce:1"}),
              testing::HasSubstr("not an UltraServer node"));
  EXPECT_THAT(attempt({"--simulate=trn2u.48xlarge", "--simulate-ultraserver=a11ce:4"}),
              testing::HasSubstr("position must be 0, 1, 2 or 3"));
  EXPECT_THAT(attempt({"--simulate=trn2u.48xlarge", "--simulate-ultraserver=xyz:1"}),
              testing::HasSubstr("hex digits"));
  EXPECT_THAT(attempt({"--simulate-ultraserver=a11ce:1"}), testing::HasSubstr("needs --simulate"));
}

// The driver's directory also holds its controls and a link to its module, as a real one does;
// a kernel line naming a PCI function is about the device discovery placed there, and about none
// of this node's when the function is not one of its devices'.
TEST(SimulatedDiscovery, KernelLinesMapThroughTheDevicesPlacedFunctions) {
  auto dir = TempDir::create("sim-discovery");
  config::SettingTable table("test");
  node_source::NodeSourceOptions options;
  node_source::addNodeSourceSettings(table, &options);
  ASSERT_TRUE(table
                  .parse({"--simulate=trn2.48xlarge", "--simulate-dir=" + dir->path().string()},
                         [](std::string_view) { return std::nullopt; })
                  .ok());
  auto prepared = node_source::prepareNode(options);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  const std::filesystem::path driver = prepared->roots.neuronPciDriver();
  EXPECT_EQ(driver.filename(), "neuron-driver");
  std::ofstream(driver / "bind") << "";
  std::filesystem::create_directory_symlink("../../../../module/neuron", driver / "module");
  EXPECT_EQ(discovery::neuronPciFunctions(prepared->roots).size(), 16U);
  auto found = discovery::discoverNode(prepared->roots, {});
  ASSERT_TRUE(found.ok()) << found.error().message;
  std::vector<std::string> functions;
  for (const topology::Device& device : found->node.devices)
    functions.push_back(device.pciBdf);
  EXPECT_EQ(health::deviceOfPciFunction(functions, "0000:cc:00.0"), 0);
  EXPECT_EQ(health::deviceOfPciFunction(functions, "0000:6f:00.0"), 4);
  EXPECT_EQ(health::deviceOfPciFunction(functions, "0000:10:1e.0"), std::nullopt);
  EXPECT_EQ(discovery::pcieRootOf(prepared->roots, "0000:99:1e.0"), "") << "no such function";
  EXPECT_EQ(discovery::pcieRootOf(prepared->roots, "../../etc"), "");
}

// Every chip of a trn2 and a trn2u publishes its PCIe root, shared by the four chips of its group
// and by EFAs (the simulator's assumption where AWS published no roots): what pairs a chip with
// a card.
TEST(SimulatedDiscovery, EveryTrn2ChipHasAPcieRootWithEfasOnIt) {
  for (const char* type : {"trn2.48xlarge", "trn2u.48xlarge"}) {
    auto dir = TempDir::create("sim-discovery");
    ASSERT_TRUE(dir.ok());
    simulator::SimulationSpec spec;
    spec.instanceType = type;
    spec.characterDevices = false;
    auto tree = simulator::writeSimulatedTree(spec, dir->path());
    ASSERT_TRUE(tree.ok()) << tree.error().message;
    auto found = discovery::discoverNode(tree->roots(), {});
    ASSERT_TRUE(found.ok()) << found.error().message;
    std::set<std::string> roots;
    for (const topology::Device& device : found->node.devices) {
      ASSERT_FALSE(device.pcieRoot.empty()) << type << " neuron" << device.index;
      roots.insert(device.pcieRoot);
    }
    EXPECT_EQ(roots.size(), 4U) << type;
    std::set<std::string> efaRoots;
    for (const auto& entry : std::filesystem::directory_iterator(tree->roots().sys / "bus" / "pci" /
                                                                 "drivers" / "efa")) {
      efaRoots.insert(discovery::pcieRootOf(tree->roots(), entry.path().filename().string()));
    }
    EXPECT_EQ(efaRoots, roots) << type;
  }
}

// The driver numbers its devices once, while loading: a map found from its load lines holds
// after the kernel's ring has dropped them, as long as the same devices are bound.
TEST(SimulatedDiscovery, ThePlacedFunctionsOutliveTheLoadLines) {
  auto dir = TempDir::create("sim-discovery");
  simulator::SimulationSpec spec;
  spec.instanceType = "trn1.32xlarge";
  auto tree = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  auto first = discovery::discoverNode(tree->roots(), {});
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(first->node.devices[4].pciBdf, "0000:10:1c.0");
  std::ofstream(tree->roots().kernelLog(), std::ios::trunc) << "6,9,9,-;kernel: much later\n";
  auto later = discovery::discoverNode(tree->roots(), {});
  ASSERT_TRUE(later.ok()) << later.error().message;
  EXPECT_EQ(later->node.devices[4].pciBdf, "0000:10:1c.0");
  EXPECT_EQ(later->pciSource, "kernel log");
  EXPECT_TRUE(later->findings.empty()) << later->findings.front();
}

// Without the driver's answer (no ioctl on a simulated node's /dev, and a kernel log that no
// longer holds the load lines), no device gets a PCI function: no guess from address order, and
// the node says why.
TEST(SimulatedDiscovery, NoLoadLinesNoPciAttributes) {
  auto dir = TempDir::create("sim-discovery");
  simulator::SimulationSpec spec;
  spec.instanceType = "trn2.48xlarge";
  auto tree = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  std::ofstream(tree->roots().kernelLog(), std::ios::trunc) << "6,1,1,-;kernel: a wrapped ring\n";
  auto found = discovery::discoverNode(tree->roots(), {});
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found->pciSource, "");
  for (const topology::Device& device : found->node.devices) {
    EXPECT_EQ(device.pciBdf, "") << device.index;
    EXPECT_EQ(device.pcieRoot, "") << device.index;
    EXPECT_FALSE(device.numaNode.has_value()) << device.index;
    EXPECT_TRUE(device.health.healthy) << "an unknown function is no fault of the chip";
  }
  ASSERT_EQ(found->findings.size(), 1U);
  EXPECT_THAT(found->findings[0], testing::HasSubstr("no PCI function is known for neuron0"));
}

// A simulated /dev/neuronN is as strict as a real one: a character device of a major Linux keeps
// for local use, with no driver behind it, so opening it answers ENXIO where the device rules let
// it through (here: root, no device cgroup) and EPERM in a container the runtime did not grant it
// to. Copies of /dev/null's numbers, which every container may open, could not show a wrong grant.
TEST(SimulatedDiscovery, DeviceNodesAreCharacterDevicesWithNoDriverBehindThem) {
  auto dir = TempDir::create("sim-discovery");
  simulator::SimulationSpec spec;
  spec.instanceType = "trn2.48xlarge";
  auto tree = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  if (!tree->characterDevices) GTEST_SKIP() << "mknod needs CAP_MKNOD";
  struct stat node {};
  ASSERT_EQ(::stat(tree->roots().deviceNode(5).c_str(), &node), 0);
  ASSERT_TRUE(S_ISCHR(node.st_mode));
  const unsigned major = ::major(node.st_rdev);
  EXPECT_TRUE((major >= 60 && major <= 63) || (major >= 120 && major <= 127) ||
              (major >= 240 && major <= 254))
      << major;
  EXPECT_EQ(::minor(node.st_rdev), 5U);
  errno = 0;
  EXPECT_EQ(::open(tree->roots().deviceNode(5).c_str(), O_RDONLY | O_CLOEXEC), -1);
  EXPECT_EQ(errno, ENXIO);
}

// An agent restarted over its --simulate-dir (a DaemonSet pod restart) finds the node as it was,
// with the faults injected since; another type's tree, or a foreign sys/, is refused.
TEST(SimulatedDiscovery, ReusesItsOwnTreeAndRefusesAnyOther) {
  auto dir = TempDir::create("sim-discovery");
  simulator::SimulationSpec spec;
  spec.instanceType = "inf2.xlarge";
  auto first = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_FALSE(first->reused);
  // A fault injected while the first agent ran: the device node disappears.
  std::filesystem::remove(first->roots().deviceNode(0));
  auto again = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE(again->reused);
  EXPECT_FALSE(std::filesystem::exists(again->roots().deviceNode(0)));

  spec.instanceType = "trn2.48xlarge";
  auto otherType = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_FALSE(otherType.ok());
  EXPECT_NE(otherType.error().message.find("holds a simulated inf2.xlarge tree"), std::string::npos)
      << otherType.error().message;

  std::filesystem::create_directories(dir->path() / "foreign" / "sys");
  auto foreign = simulator::writeSimulatedTree(spec, dir->path() / "foreign");
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.error().message.find("not a complete simulated tree"), std::string::npos);

  spec.instanceType = "trn9.huge";
  auto unknown = simulator::writeSimulatedTree(spec, dir->path() / "other");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("known: inf1.xlarge"), std::string::npos);
}

}  // namespace
}  // namespace torus
