// Each simulator fault knob, and each kind of broken driver report, gives its documented result:
// the device is kept but Unhealthy with a reason naming the file and the bad text, or the node
// reports a finding; the rest of the node keeps working.
#include <chrono>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/health/node_monitor.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus {
namespace {

namespace fs = std::filesystem;

class FaultInjectionTest : public ::testing::Test {
 protected:
  discovery::Discovery simulate(const std::string& type, const std::vector<std::string>& faults,
                                discovery::DiscoveryOptions options = {}) {
    auto dir = TempDir::create("sim-fault");
    EXPECT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    simulator::SimulationSpec spec;
    spec.instanceType = type;
    for (const std::string& text : faults) {
      auto fault = simulator::parseFault(text);
      EXPECT_TRUE(fault.ok()) << text;
      spec.faults.push_back(*fault);
    }
    auto tree = simulator::writeSimulatedTree(spec, dir_->path());
    EXPECT_TRUE(tree.ok()) << tree.error().message;
    roots_ = tree->roots();
    auto found = discovery::discoverNode(roots_, options);
    EXPECT_TRUE(found.ok()) << found.error().message;
    return std::move(*found);
  }
  fs::path deviceDir(int index) const {
    return roots_.sys / "devices" / "virtual" / "neuron_device" /
           ("neuron" + std::to_string(index));
  }
  static int unhealthyCount(const topology::Node& node) {
    return node.deviceCount() - node.healthyDevices().size();
  }

  std::optional<TempDir> dir_;
  discovery::DiscoveryRoots roots_;
};

TEST_F(FaultInjectionTest, MissingDeviceNodeMakesOnlyThatDeviceUnhealthy) {
  const auto found = simulate("trn2.48xlarge", {"device-node-missing:3"});
  const auto& device = found.node.devices[3];
  EXPECT_FALSE(device.health.healthy);
  EXPECT_NE(
      device.health.reason.find("device node " + roots_.deviceNode(3).string() + " is missing"),
      std::string::npos)
      << device.health.reason;
  EXPECT_EQ(unhealthyCount(found.node), 1);
  EXPECT_EQ(found.node.logicalCoreCount(), 64);  // ids stay stable
}

TEST_F(FaultInjectionTest, GarbledAttributeNamesFileAndText) {
  const auto found = simulate("trn2.48xlarge", {"garble:5:core_count"});
  const auto& reason = found.node.devices[5].health.reason;
  EXPECT_FALSE(found.node.devices[5].health.healthy);
  EXPECT_NE(reason.find("core_count: expected a core count in [1, 8], got \"\\u00ff\\u00fe-x"),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("neuron5/core_count"), std::string::npos) << reason;
  EXPECT_EQ(unhealthyCount(found.node), 1);
}

TEST_F(FaultInjectionTest, GarbledConnectedDevicesAndArchitecture) {
  const auto found = simulate(
      "trn1.32xlarge", {"garble:0:connected_devices", "garble:1:info/architecture/arch_type"});
  EXPECT_NE(found.node.devices[0].health.reason.find("connected_devices: expected comma-separated"),
            std::string::npos);
  EXPECT_NE(found.node.devices[1].health.reason.find("arch_type: expected a printable name"),
            std::string::npos)
      << found.node.devices[1].health.reason;
  EXPECT_EQ(unhealthyCount(found.node), 2);
}

TEST_F(FaultInjectionTest, RaisedEccCounterMakesTheDeviceUnhealthy) {
  const auto found = simulate("inf2.48xlarge", {"ecc:7:3"});
  EXPECT_EQ(found.node.devices[7].health.reason,
            "stats/hardware/mem_ecc_uncorrected is 3 (uncorrected ECC errors)");
  EXPECT_EQ(unhealthyCount(found.node), 1);
}

// trn2's uncorrectable HBM error awaiting repair shows only in the repairable counter
// (v3/neuron_dhal_v3.c:1081-1124): the chip leaves service under a code of its own.
TEST_F(FaultInjectionTest, RepairableHbmErrorTakesTheChipOutOfService) {
  const auto found = simulate("trn2.48xlarge", {"ecc-repairable:3:2"});
  EXPECT_EQ(unhealthyCount(found.node), 1);
  const topology::DeviceHealth& health = found.node.devices[3].health;
  ASSERT_EQ(health.problems.size(), 1U);
  EXPECT_EQ(health.problems[0].dimension, topology::HealthDimension::kEccUncorrected);
  EXPECT_EQ(health.problems[0].code, discovery::kHbmRepairPendingCode);
  EXPECT_NE(health.reason.find("mem_ecc_repairable_uncorrected is 2"), std::string::npos)
      << health.reason;
}

// A chip that failed to probe: its slot stays, out of service; every other chip lists no
// neighbour (the driver's table is filled only for a full set), which is one finding and keeps
// the type's wiring rather than a node without links; the others keep their PCI functions.
TEST_F(FaultInjectionTest, AChipThatFailedToProbeLeavesTheOthersTheirWiring) {
  const auto found = simulate("trn2.48xlarge", {"probe-fail:6"});
  ASSERT_EQ(found.node.deviceCount(), 16);
  EXPECT_EQ(unhealthyCount(found.node), 1);
  EXPECT_FALSE(found.node.devices[6].health.healthy);
  EXPECT_EQ(found.node.devices[6].pciBdf, "");
  EXPECT_EQ(found.node.devices[0].connected, (std::vector<int>{12, 1, 3, 4}));
  EXPECT_EQ(found.node.devices[7].pciBdf, "0000:6e:00.0");
  bool told = false;
  for (const std::string& finding : found.findings) {
    told = told ||
           finding.find("a device failed to load (the driver has 15 of 16)") != std::string::npos;
  }
  EXPECT_TRUE(told) << ::testing::PrintToString(found.findings);
  auto log = readSmallFile(roots_.kernelLog(), 1 << 20);
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("neuron-driver 0000:59:00.0: Can't enable the device"), std::string::npos);
}

TEST_F(FaultInjectionTest, CutLinkIsReportedAgainstTheCatalog) {
  const auto found = simulate("trn2.48xlarge", {"link-cut:0-1"});
  EXPECT_EQ(unhealthyCount(found.node), 0);
  ASSERT_EQ(found.findings.size(), 2U);
  EXPECT_EQ(found.findings[0],
            "neuron0: connected_devices is \"12, 3, 4\", trn2.48xlarge wires \"12, 1, 3, 4\"");
  EXPECT_EQ(found.node.devices[0].connected, (std::vector<int>{12, 3, 4}));
}

TEST_F(FaultInjectionTest, OneSidedLinkIsReportedNotCrashedOn) {
  simulate("inf2.48xlarge", {});
  ASSERT_TRUE(writeFile(deviceDir(4) / "connected_devices", "3\n").ok());  // forgets 5
  auto found = discovery::discoverNode(roots_, {});
  ASSERT_TRUE(found.ok());
  bool reported = false;
  for (const auto& finding : found->findings) {
    reported = reported || finding ==
                               "NeuronLink report is one-sided: neuron5 lists 4 but "
                               "neuron4 does not list 5";
  }
  EXPECT_TRUE(reported);
}

TEST_F(FaultInjectionTest, NeighbourOutOfRangeMarksTheDevice) {
  simulate("inf2.24xlarge", {});
  ASSERT_TRUE(writeFile(deviceDir(2) / "connected_devices", "1, 3, 40\n").ok());
  auto found = discovery::discoverNode(roots_, {});
  ASSERT_TRUE(found.ok());
  EXPECT_NE(found->node.devices[2].health.reason.find("names device 40"), std::string::npos);
}

TEST_F(FaultInjectionTest, MissingClassEntryKeepsCoreIdsStable) {
  simulate("trn1.32xlarge", {});
  fs::remove(roots_.neuronClass() / "neuron9");
  auto found = discovery::discoverNode(roots_, {});
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->node.deviceCount(), 16);
  EXPECT_FALSE(found->node.devices[9].health.healthy);
  EXPECT_NE(found->node.devices[9].health.reason.find("neuron9 is missing"), std::string::npos);
  EXPECT_EQ(found->node.coresOfDevice(10).toRangeString(), "20-21");
}

// Regression: the highest device vanishing shrank the node to 15 devices and 60 cores, and its
// four healthy neighbours left service for naming a device "this node does not have".
TEST_F(FaultInjectionTest, TheHighestDeviceVanishingKeepsItsSlot) {
  simulate("trn2.48xlarge", {});
  fs::remove(roots_.neuronClass() / "neuron15");
  fs::remove_all(deviceDir(15));
  auto found = discovery::discoverNode(roots_, {});
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found->node.deviceCount(), 16);
  EXPECT_EQ(found->node.logicalCoreCount(), 64);
  EXPECT_FALSE(found->node.devices[15].health.healthy);
  EXPECT_NE(found->node.devices[15].health.reason.find("neuron15 is missing"), std::string::npos);
  EXPECT_EQ(found->node.healthyDevices().size(), 15U)
      << "only the missing device leaves service, not its neighbours";
}

// Regression: one blocking read (a FIFO standing in for a driver attribute that hangs) froze the
// monitor: a fault on another device went unnoticed, kernel-log errors waited behind it, and
// shutdown hung on it.
TEST_F(FaultInjectionTest, AHungReadTakesOnlyItsDeviceOutAndNeverStallsTheMonitor) {
  using namespace std::chrono_literals;
  using Clock = std::chrono::steady_clock;
  const auto found = simulate("trn2.48xlarge", {});
  auto monitor = std::make_unique<health::NodeMonitor>(roots_, discovery::DiscoveryOptions{}, found,
                                                       100ms, 5min, 300ms);
  const fs::path reset = deviceDir(12) / "reset";
  fs::remove(reset);
  ASSERT_EQ(::mkfifo(reset.c_str(), 0600), 0);  // reads block until someone writes

  const auto waitFor = [&](const std::function<bool()>& condition, Clock::duration limit) {
    const auto deadline = Clock::now() + limit;
    while (!condition() && Clock::now() < deadline)
      std::this_thread::sleep_for(20ms);
    return condition();
  };
  ASSERT_TRUE(waitFor([&] { return !monitor->node().devices[12].health.healthy; }, 5s));
  EXPECT_NE(monitor->node().devices[12].health.reason.find("has not returned since"),
            std::string::npos)
      << monitor->node().devices[12].health.reason;
  ASSERT_FALSE(monitor->stalledReads().empty());
  EXPECT_NE(monitor->stalledReads()[0].find("neuron12: health attributes, hung since"),
            std::string::npos);

  // Another device's fault is still seen, within 2 s.
  const auto faultAt = Clock::now();
  fs::remove(roots_.dev / "neuron3");
  EXPECT_TRUE(waitFor([&] { return !monitor->node().devices[3].health.healthy; }, 2s));
  EXPECT_LT(Clock::now() - faultAt, 2s);
  // So is a kernel-log error, without waiting behind the hung read.
  const auto reportedAt = Clock::now();
  monitor->reportKernelError(7, "DMA_ERROR");
  EXPECT_LT(Clock::now() - reportedAt, 2s);
  EXPECT_FALSE(monitor->node().devices[7].health.healthy);

  // Shutdown does not wait on the hung read.
  const auto stopping = Clock::now();
  monitor.reset();
  EXPECT_LT(Clock::now() - stopping, 5s);
  // Let the abandoned read finish, so nothing outlives the test.
  const int writer = ::open(reset.c_str(), O_WRONLY | O_NONBLOCK);
  if (writer >= 0) {
    (void)!::write(writer, "1\n", 2);
    ::close(writer);
  }
}

// A counter that cannot be read says nothing about the memory it counts: the device stays in
// service with its health unknown, and is healthy again once the counter reads. A node-wide source
// lost (the kernel log) makes every device unknown; a fault still makes one unhealthy.
TEST_F(FaultInjectionTest, UnreadableSignalsMakeHealthUnknownNotUnhealthy) {
  using namespace std::chrono_literals;
  using topology::HealthState;
  const auto found = simulate("trn2.48xlarge", {});
  health::NodeMonitor monitor(roots_, discovery::DiscoveryOptions{}, found, 1h);
  const fs::path counter = deviceDir(5) / "stats" / "hardware" / "mem_ecc_uncorrected";
  ASSERT_TRUE(writeFile(counter, std::string("\x01\xfejunk", 6)).ok());
  monitor.refreshHealth();
  topology::Node node = monitor.node();
  EXPECT_EQ(node.devices[5].health.state(), HealthState::kUnknown);
  EXPECT_TRUE(node.devices[5].health.healthy) << "still in service";
  ASSERT_EQ(node.devices[5].health.unmonitored.size(), 1u);
  EXPECT_NE(node.devices[5].health.unmonitored[0].find("mem_ecc_uncorrected"), std::string::npos)
      << node.devices[5].health.unmonitored[0];
  EXPECT_EQ(node.devices[4].health.state(), HealthState::kHealthy);
  ASSERT_TRUE(writeFile(counter, "0\n").ok());
  monitor.refreshHealth();
  EXPECT_EQ(monitor.node().devices[5].health.state(), HealthState::kHealthy);

  monitor.setSourceLost("kernel log", "syslog(2) refused");
  monitor.reportKernelError(2, "HBM_UNCORRECTABLE_ERROR");
  node = monitor.node();
  EXPECT_EQ(node.devices[0].health.state(), HealthState::kUnknown);
  EXPECT_EQ(node.devices[0].health.unmonitored,
            std::vector<std::string>{"kernel log: syslog(2) refused"});
  EXPECT_EQ(node.devices[2].health.state(), HealthState::kUnhealthy);
  ASSERT_EQ(node.devices[2].health.problems.size(), 1u);
  EXPECT_EQ(node.devices[2].health.problems[0].dimension,
            topology::HealthDimension::kHardwareError);
  EXPECT_EQ(node.devices[2].health.problems[0].code, "HBM_UNCORRECTABLE_ERROR");
  monitor.refreshHealth();  // passes do not repeat what they carry over
  EXPECT_EQ(monitor.node().devices[2].health, node.devices[2].health);
  monitor.setSourceRestored("kernel log");
  EXPECT_EQ(monitor.node().devices[0].health.state(), HealthState::kHealthy);
}

TEST_F(FaultInjectionTest, InvalidResetStateAndCoreCountMismatch) {
  simulate("trn2.48xlarge", {});
  ASSERT_TRUE(writeFile(deviceDir(0) / "reset", "2\n").ok());
  ASSERT_TRUE(writeFile(deviceDir(1) / "core_count", "4").ok());
  auto found = discovery::discoverNode(roots_, {});
  ASSERT_TRUE(found.ok());
  EXPECT_NE(found->node.devices[0].health.reason.find("INVALID"), std::string::npos);
  EXPECT_EQ(found->node.devices[1].health.reason, "core_count is 4, expected 8 for trn2.48xlarge");
}

TEST_F(FaultInjectionTest, WithoutDmiTheTypeIsInferredAndReported) {
  simulate("inf2.24xlarge", {});
  fs::remove(roots_.dmiProductName());
  auto found = discovery::discoverNode(roots_, {});
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->node.instanceType, "inf2.24xlarge");
  ASSERT_FALSE(found->findings.empty());
  EXPECT_NE(found->findings[0].find("instance type inferred as inf2.24xlarge"), std::string::npos);
}

TEST_F(FaultInjectionTest, UnknownTypeStillYieldsANode) {
  const auto found = simulate("inf2.48xlarge", {}, {.instanceType = "inf9.mega", .lnc = {}});
  EXPECT_EQ(found.node.deviceCount(), 12);
  EXPECT_EQ(found.node.logicalCoreCount(), 24);
  ASSERT_FALSE(found.findings.empty());
  EXPECT_NE(found.findings[0].find("\"inf9.mega\" is not in the catalog"), std::string::npos);
}

TEST_F(FaultInjectionTest, GarbledLncFileFallsBackToTheDefault) {
  simulate("trn2.48xlarge", {});
  ASSERT_TRUE(writeFile(roots_.lncConfigFile(), "NEURON_LOGICAL_NC_CONFIG=\xff\n").ok());
  auto found = discovery::discoverNode(roots_, {});
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->node.lnc, 2);
  ASSERT_EQ(found->findings.size(), 1U);
  EXPECT_NE(found->findings[0].find("using LNC 2"), std::string::npos);
}

TEST_F(FaultInjectionTest, NoDriverIsAClearError) {
  auto found = discovery::discoverNode(discovery::DiscoveryRoots::under("/nonexistent-root"), {});
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.error().code, ErrorCode::kNotFound);
  EXPECT_NE(found.error().message.find("is the Neuron driver loaded?"), std::string::npos);
}

TEST_F(FaultInjectionTest, FaultOnAMissingDeviceIsRejected) {
  auto dir = TempDir::create("sim-fault");
  simulator::SimulationSpec spec;
  spec.instanceType = "inf2.xlarge";
  spec.faults.push_back(*simulator::parseFault("ecc:5"));
  auto tree = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.error().message.find("has no neuron5"), std::string::npos);
}

}  // namespace
}  // namespace torus
