// A node of a type Torus's catalog lacks (trn2.3xlarge: one Trainium2), as its driver serves it,
// read by the real discovery code: the devices and cores the driver reports, the type named as
// unknown, and no false alarm from the empty connected_devices the driver prints when it has no
// table for the chip count.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus {
namespace {

TEST(UncataloguedInstance, Trn2ThreeXlargeIsDiscoveredFromWhatItsDriverReports) {
  auto dir = TempDir::create("sim-uncatalogued");
  ASSERT_TRUE(dir.ok());
  simulator::SimulationSpec spec;
  spec.instanceType = "trn2.3xlarge";
  auto tree = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(tree.ok()) << tree.error().message;

  const discovery::DiscoveryRoots roots = tree->roots();
  auto product = readSmallFile(roots.dmiProductName(), 256);
  ASSERT_TRUE(product.ok());
  EXPECT_EQ(*product, "trn2.3xlarge\n");
  auto links = readSmallFile(roots.neuronClass() / "neuron0" / "connected_devices", 256);
  ASSERT_TRUE(links.ok());
  EXPECT_EQ(*links, "\n");  // total_neuron_devices is 1: no table (v3/neuron_dhal_v3.c:916-940)

  auto found = discovery::discoverNode(roots, {});
  ASSERT_TRUE(found.ok()) << found.error().message;
  const topology::Node& node = found->node;
  EXPECT_EQ(node.instanceType, "trn2.3xlarge");
  EXPECT_EQ(node.catalog, nullptr);
  EXPECT_EQ(node.deviceCount(), 1);
  EXPECT_EQ(node.lnc, 2);
  EXPECT_EQ(node.logicalCoreCount(), 4);
  ASSERT_EQ(node.devices.size(), 1U);
  EXPECT_TRUE(node.devices[0].health.healthy) << node.devices[0].health.reason;
  EXPECT_TRUE(node.devices[0].connected.empty());
  EXPECT_FALSE(node.devices[0].pciBdf.empty());
  // One finding: the type. Nothing about links or missing devices.
  ASSERT_EQ(found->findings.size(), 1U) << found->findings.back();
  EXPECT_NE(found->findings[0].find("\"trn2.3xlarge\" is not in the catalog"), std::string::npos)
      << found->findings[0];
}

// A restart finds the tree it wrote, as for a catalog type.
TEST(UncataloguedInstance, ARestartReusesTheTree) {
  auto dir = TempDir::create("sim-uncatalogued-reuse");
  ASSERT_TRUE(dir.ok());
  simulator::SimulationSpec spec;
  spec.instanceType = "trn2.3xlarge";
  ASSERT_TRUE(simulator::writeSimulatedTree(spec, dir->path()).ok());
  auto again = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE(again->reused);
  spec.instanceType = "trn2.48xlarge";
  EXPECT_FALSE(simulator::writeSimulatedTree(spec, dir->path()).ok());
}

}  // namespace
}  // namespace torus
