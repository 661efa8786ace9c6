#include "node-runtime/agent/debug_report.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus::agent {
namespace {

using nlohmann::json;

struct SimulatedNode {
  TempDir dir;
  discovery::DiscoveryRoots roots;
  topology::Node node;
};

SimulatedNode simulated() {
  auto dir = TempDir::create("debug-report");
  EXPECT_TRUE(dir.ok());
  simulator::SimulationSpec spec;
  spec.instanceType = "inf2.24xlarge";  // six small devices: a quick tree
  spec.characterDevices = false;
  auto tree = simulator::writeSimulatedTree(spec, dir->path());
  EXPECT_TRUE(tree.ok()) << tree.error().message;
  auto found = discovery::discoverNode(tree->roots(), {});
  EXPECT_TRUE(found.ok()) << found.error().message;
  return {std::move(*dir), tree->roots(), found->node};
}

// The device's class directory as files (garbled bytes shown, not dropped), its links as targets,
// its PCI function's link attributes; a write-only attribute is never read.
TEST(DebugReport, DriverFilesAreTheDevicesSysfsTree) {
  SimulatedNode sim = simulated();
  const topology::Device& device = sim.node.devices[5];
  const auto deviceDir = std::filesystem::canonical(sim.roots.deviceDir(5));
  ASSERT_TRUE(writeFile(deviceDir / "stats/hardware/mem_ecc_uncorrected", "\x01\xfejunk").ok());
  ASSERT_TRUE(writeFile(deviceDir / "write_only", "secret-ish").ok());
  ::chmod((deviceDir / "write_only").c_str(), 0200);
  std::filesystem::create_directory_symlink("../..", deviceDir / "loop");

  const json files = driverFilesOf(sim.roots, device);
  EXPECT_EQ(files["files"]["core_count"], "2");
  EXPECT_EQ(files["files"]["stats/hardware/mem_ecc_uncorrected"], "\\x01\\xfejunk");
  EXPECT_FALSE(files["files"].contains("write_only"));
  EXPECT_EQ(files["links"]["loop"], "../..");
  EXPECT_EQ(files["pciAttributes"]["vendor"], "0x1d0f\n");
  EXPECT_FALSE(files["truncated"].get<bool>());

  DriverFileLimits few;
  few.maxFiles = 3;
  const json cut = driverFilesOf(sim.roots, device, few);
  EXPECT_EQ(cut["files"].size(), 3U);
  EXPECT_TRUE(cut["truncated"].get<bool>());
}

// syslog(2) hands on the kernel's raw bytes: a line that is not UTF-8 is shown byte by byte, and
// the report still renders (before, dump() threw and /debug answered 500 until the line aged out).
TEST(DebugReport, AKernelLineThatIsNotUtf8StillRenders) {
  SimulatedNode sim = simulated();
  RecentKernelLines lines;
  lines.add(2, "HBM_UNCORRECTABLE_ERROR",
            std::string("nd2 NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR in \xff\xfe.so"));
  DebugReportInput input;
  input.node = sim.node;
  input.kernelLines = lines.lines();
  input.driverFiles.assign(sim.node.devices.size(), json(nullptr));
  auto report = debugReport(input);
  ASSERT_TRUE(report.ok()) << report.error().message;
  std::string text;
  ASSERT_NO_THROW(text = report->dump());
  EXPECT_NE(text.find("HBM_UNCORRECTABLE_ERROR in "), std::string::npos) << text;
  EXPECT_EQ(text.find("\xff"), std::string::npos);
}

TEST(DebugReport, OneDeviceWithItsKernelLinesOrARefusalNamingTheRange) {
  SimulatedNode sim = simulated();
  RecentKernelLines lines;
  lines.add(5, "HBM_UNCORRECTABLE_ERROR",
            "neuron 0000:40:1c.0: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR");
  lines.add(3, "SRAM_UNCORRECTABLE_ERROR", "nd3 NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR");
  DebugReportInput input;
  input.node = sim.node;
  input.node.devices[5].health = topology::DeviceHealth::unhealthy(
      topology::HealthDimension::kHardwareError, "HBM_UNCORRECTABLE_ERROR", "kernel log");
  input.device = 5;
  input.kernelLines = lines.lines();
  input.driverFiles.assign(sim.node.devices.size(), json(nullptr));
  input.driverFiles[5] = driverFilesOf(sim.roots, sim.node.devices[5]);
  input.metrics = "torus_device_healthy 1\n";
  auto report = debugReport(input);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ((*report)["devices"].size(), 1U);
  const json& device = (*report)["devices"][0];
  EXPECT_EQ(device["index"], 5);
  EXPECT_EQ(device["health"]["state"], "unhealthy");
  EXPECT_EQ(device["health"]["problems"][0]["dimension"], "hardware-error");
  // inf2.24xlarge's assumed layout: neuron5 is the second chip of the second root.
  EXPECT_EQ(device["pciBusID"], "0000:40:1c.0");
  EXPECT_EQ(device["driver"]["files"]["core_count"], "2");
  ASSERT_EQ((*report)["kernelLog"]["lines"].size(), 1U);
  EXPECT_EQ((*report)["kernelLog"]["lines"][0]["type"], "HBM_UNCORRECTABLE_ERROR");

  input.device = 6;
  auto refused = debugReport(input);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "device 6 is not on this node (it has 6 devices: 0-5)");
}

TEST(DebugReport, KeepsOnlyTheNewestKernelLines) {
  RecentKernelLines lines;
  for (std::size_t i = 0; i < RecentKernelLines::kMaxLines + 10; ++i)
    lines.add(0, "T", std::to_string(i));
  const auto kept = lines.lines();
  ASSERT_EQ(kept.size(), RecentKernelLines::kMaxLines);
  EXPECT_EQ(kept.front().text, "10");
  EXPECT_EQ(kept.back().text, std::to_string(RecentKernelLines::kMaxLines + 9));
}

}  // namespace
}  // namespace torus::agent
