// neuron-sim-driver as the local cluster's nodes use it: a FUSE mount of a simulated tree's
// neuron_device directory, read and reset by the agent's own reset code. What it must show is
// what a real driver (aws-neuron-driver 2.24.7.0) shows and a plain directory cannot: a reset
// takes time and the resets of many devices run together, a reset can end INVALID, a write while
// a process holds the device is ignored and one while a reset is pending is dropped, a reset
// counts in reset_req_count, files have the driver's modes (EACCES for writing one without a
// store, even to root), metric writes clear a counter or are ignored, and what the tests write
// into the tree is read at once. Needs root and /dev/fuse (CI has both); skipped with the reason
// otherwise.
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/unique_fd.h"
#include "node-runtime/discovery/sysfs_attribute.h"
#include "node-runtime/reset/core_reset.h"
#include "node-runtime/simulator/sim_fault.h"
#include "node-runtime/simulator/sim_reset.h"
#include "node-runtime/simulator/sim_tree.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr milliseconds kResetTime{500};

bool isMountPoint(const fs::path& path) {
  struct stat self {};
  struct stat parent {};
  return ::stat(path.c_str(), &self) == 0 && ::stat(path.parent_path().c_str(), &parent) == 0 &&
         self.st_dev != parent.st_dev;
}

// A trn2.48xlarge tree under tree/, and a view of it under view/ whose neuron_device directory
// is neuron-sim-driver's mount, as /sys is on a local-cluster node. The tests write faults into
// tree/ (as the cluster's tests do from the host) and read and reset through view/.
class SimDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: mounting FUSE";
    if (::access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "no usable /dev/fuse";
    auto dir = TempDir::create("sim-driver");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    simulator::SimulationSpec spec;
    spec.instanceType = "trn2.48xlarge";
    auto tree = simulator::writeSimulatedTree(spec, tree_());
    ASSERT_TRUE(tree.ok()) << tree.error().message;
    // The class links are relative (../../devices/virtual/neuron_device/neuronN): copied, they
    // lead into the view's mount.
    const fs::path viewSys = dir_->path() / "view" / "sys";
    fs::create_directories(viewSys / "devices" / "virtual" / "neuron_device");
    fs::copy(tree_() / "sys" / "class", viewSys / "class",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    roots_ = tree->roots();
    roots_.sys = viewSys;
    driver_ = std::make_unique<BackgroundProcess>(std::vector<std::string>{
        binaryPath("neuron-sim-driver"), "--tree=" + tree_().string(),
        "--mountpoint=" + (viewSys / "devices" / "virtual" / "neuron_device").string(),
        "--reset-time=" + std::to_string(kResetTime.count()) + "ms",
        "--dev-root=" + roots_.dev.string()});
    ASSERT_TRUE(driver_->waitForStderr("serving", std::chrono::seconds(10)))
        << driver_->stderrText();
    ASSERT_TRUE(isMountPoint(viewSys / "devices" / "virtual" / "neuron_device"));
  }

  void TearDown() override {
    if (driver_ == nullptr) return;
    driver_->signal(SIGTERM);
    EXPECT_EQ(driver_->waitExit(std::chrono::seconds(10)), 0) << driver_->stderrText();
  }

  fs::path tree_() const { return dir_->path() / "tree"; }
  fs::path viewed(int device, const char* attribute) const {
    return roots_.neuronClass() / ("neuron" + std::to_string(device)) / attribute;
  }
  Result<int> resetState(int device) const {
    return discovery::readParsed(viewed(device, "reset"), "reset", discovery::parseResetState);
  }

  std::unique_ptr<TempDir> dir_;
  discovery::DiscoveryRoots roots_;
  std::unique_ptr<BackgroundProcess> driver_;
};

TEST_F(SimDriver, AResetTakesTimeAndSixteenRunTogether) {
  ASSERT_TRUE(discovery::writeAttribute(viewed(2, "reset"), "1\n").ok());
  EXPECT_EQ(resetState(2).valueOr(-1), 0);  // the write returned; the reset runs
  ASSERT_TRUE(eventually([&] { return resetState(2).valueOr(-1) == 1; }, std::chrono::seconds(5)));

  topology::DeviceSet all;
  for (int device = 0; device < 16; ++device)
    all.insert(device);
  const auto started = std::chrono::steady_clock::now();
  auto reset = reset::resetDevices(roots_, all, reset::ResetPolicy{});
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(reset.ok()) << reset.error().message;
  EXPECT_GE(took, kResetTime);
  // One after another they would take 16 resets' time; together, about one.
  EXPECT_LT(took, 4 * kResetTime) << "resets of 16 devices did not run together";
  for (int device = 0; device < 16; ++device)
    EXPECT_EQ(resetState(device).valueOr(-1), 1) << device;
}

TEST_F(SimDriver, AFailedResetFailsTheCallNamingTheDeviceUntilAResetSucceeds) {
  ASSERT_TRUE(simulator::applyFault(tree_(), *simulator::parseFault("reset-fail:5")).ok());
  topology::DeviceSet devices;
  devices.insert(4);
  devices.insert(5);
  auto failed = reset::resetDevices(roots_, devices, reset::ResetPolicy{});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "resetting neuron5: the driver reports state INVALID (2)");
  EXPECT_EQ(resetState(4).valueOr(-1), 1);  // its neighbour's reset ran to the end
  EXPECT_EQ(resetState(5).valueOr(-1), 2);
  fs::remove(simulator::resetBehaviourFile(tree_(), 5));
  EXPECT_TRUE(reset::resetDevices(roots_, devices, reset::ResetPolicy{}).ok());
}

TEST_F(SimDriver, AResetTooSlowForThePolicyTimesOut) {
  ASSERT_TRUE(simulator::applyFault(tree_(), *simulator::parseFault("reset-slow:7:3000")).ok());
  reset::ResetPolicy policy;
  policy.readyTimeout = milliseconds(1000);
  auto slow = reset::resetDevice(roots_, 7, policy);
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().message.find("neuron7: still in reset after 1000 ms"), std::string::npos)
      << slow.error().message;
}

// A process may open the device after the agent's scan and before its write; the driver then
// ignores the reset, answering the write with success. An empty /proc stands in for a scan that
// ran before the open: the agent finds no holder, writes, sees the driver did not take the reset
// (state never RESET, no request counted), and reports it not done instead of a reset device.
TEST_F(SimDriver, AResetTheDriverIgnoredIsReportedNotDone) {
  UniqueFd holder(::open(roots_.deviceNode(3).c_str(), O_PATH | O_CLOEXEC));
  ASSERT_TRUE(holder.valid());
  const fs::path emptyProc = dir_->path() / "proc-before-the-open";
  fs::create_directories(emptyProc);
  reset::ResetPolicy policy;
  policy.attempts = 2;
  policy.retryDelay = milliseconds(10);
  policy.procRoot = emptyProc.string();
  const std::uint64_t before = reset::resetRequestCount(roots_, 3).value_or(0);
  auto ignored = reset::resetDevice(roots_, 3, policy);
  ASSERT_FALSE(ignored.ok());
  EXPECT_NE(ignored.error().message.find("resetting neuron3: not done"), std::string::npos)
      << ignored.error().message;
  EXPECT_EQ(reset::resetRequestCount(roots_, 3).value_or(0), before);
  // With the holder gone the same call resets, and the driver counts it.
  holder.reset();
  auto reset = reset::resetDevice(roots_, 3, policy);
  ASSERT_TRUE(reset.ok()) << reset.error().message;
  EXPECT_GT(reset::resetRequestCount(roots_, 3).value_or(0), before);
}

TEST_F(SimDriver, AHeldDeviceIgnoresTheWriteAndTheAgentRefusesToReset) {
  // O_PATH: the simulated node has no driver to open; the /proc link is what the scan sees.
  const UniqueFd holder(::open(roots_.deviceNode(3).c_str(), O_PATH | O_CLOEXEC));
  ASSERT_TRUE(holder.valid());
  // Written anyway (what the agent must never rely on): accepted and ignored, never started.
  ASSERT_TRUE(discovery::writeAttribute(viewed(3, "reset"), "1\n").ok());
  EXPECT_EQ(resetState(3).valueOr(-1), 1);
  reset::ResetPolicy policy;
  policy.attempts = 2;
  policy.retryDelay = milliseconds(10);
  auto refused = reset::resetDevice(roots_, 3, policy);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("is still open by pid " + std::to_string(::getpid())),
            std::string::npos)
      << refused.error().message;
}

// Any content starts a reset (neuron_cdev.c:2979-2990), counted at once in every core's
// reset_req_count (neuron_reset.c:278); a second request while it is pending is dropped
// (neuron_reset.c:261-265); one that ends READY repairs an HBM error pending repair (the
// simulator's model of the firmware).
TEST_F(SimDriver, AnyWriteStartsAResetThatCountsItselfAndASecondWhilePendingIsDropped) {
  const auto counted = [&] {
    return readSmallFile(viewed(9, "neuron_core7/stats/other_info/reset_req_count/total"))
        .valueOr("?");
  };
  const fs::path repairable = viewed(9, "stats/hardware/mem_ecc_repairable_uncorrected");
  ASSERT_TRUE(writeFile(tree_() / "sys" / "devices" / "virtual" / "neuron_device" / "neuron9" /
                            "stats" / "hardware" / "mem_ecc_repairable_uncorrected",
                        "2\n")
                  .ok());
  // Slow enough that the second write surely comes while the first reset is pending.
  ASSERT_TRUE(simulator::applyFault(tree_(), *simulator::parseFault("reset-slow:9:2000")).ok());
  EXPECT_EQ(counted(), "0\n");
  ASSERT_TRUE(discovery::writeAttribute(viewed(9, "reset"), "please\n").ok());
  EXPECT_EQ(resetState(9).valueOr(-1), 0);
  EXPECT_EQ(counted(), "1\n");
  EXPECT_EQ(readSmallFile(repairable).valueOr("?"), "2\n");
  ASSERT_TRUE(discovery::writeAttribute(viewed(9, "reset"), "1\n").ok());  // accepted, dropped
  EXPECT_EQ(counted(), "1\n");
  ASSERT_TRUE(eventually([&] { return resetState(9).valueOr(-1) == 1; }, std::chrono::seconds(10)));
  EXPECT_EQ(readSmallFile(repairable).valueOr("?"), "0\n");
  EXPECT_EQ(counted(), "1\n");
}

// Modes as the driver registers them: core_count and connected_devices 0400, reset 0600
// (neuron_cdev.c:2993,3002,3037), metric files 0644 (neuron_sysfs_metrics.c:486-488); a file
// without write permission cannot be opened for writing, even by root (kernfs).
TEST_F(SimDriver, FilesHaveTheDriversModesAndShowWhatTheTreeHoldsNow) {
  const fs::path eccCounter = viewed(6, "stats/hardware/mem_ecc_uncorrected");
  const struct {
    fs::path file;
    unsigned mode;
  } modes[] = {
      {viewed(6, "core_count"), 0400},
      {viewed(6, "connected_devices"), 0400},
      {viewed(6, "reset"), 0600},
      {eccCounter, 0644},
      {viewed(6, "info/architecture/arch_type"), 0644},
      {viewed(6, "neuron_core0/stats/other_info/reset_req_count/total"), 0644},
      {viewed(6, "dev"), 0444},
  };
  for (const auto& [file, mode] : modes) {
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0777, mode) << file;
  }
  for (const fs::path& attribute :
       {viewed(6, "core_count"), viewed(6, "connected_devices"), viewed(6, "dev")}) {
    const UniqueFd fd(::open(attribute.c_str(), O_WRONLY | O_CLOEXEC));
    EXPECT_FALSE(fd.valid()) << attribute;
    EXPECT_EQ(errno, EACCES) << attribute;
  }
  EXPECT_EQ(readSmallFile(eccCounter).valueOr("?"), "0\n");
  ASSERT_TRUE(simulator::applyFault(tree_(), *simulator::parseFault("ecc:6:3")).ok());
  EXPECT_EQ(readSmallFile(eccCounter).valueOr("?"), "3\n");  // no cache in between
  EXPECT_EQ(readSmallFile(viewed(6, "core_count")).valueOr("?"), "8");
}

// A metric's total, present or peak is cleared by any write (neuron_sysfs_metrics.c:402-452);
// other metric files take the write and ignore it (:469-473).
TEST_F(SimDriver, MetricWritesClearACounterOrAreAcceptedAndIgnored) {
  const fs::path counter = viewed(6, "neuron_core2/stats/status/hw_error/total");
  ASSERT_TRUE(writeFile(tree_() / "sys" / "devices" / "virtual" / "neuron_device" / "neuron6" /
                            "neuron_core2" / "stats" / "status" / "hw_error" / "total",
                        "12\n")
                  .ok());
  EXPECT_EQ(readSmallFile(counter).valueOr("?"), "12\n");
  ASSERT_TRUE(discovery::writeAttribute(counter, "7\n").ok());
  EXPECT_EQ(readSmallFile(counter).valueOr("?"), "0\n");
  ASSERT_TRUE(simulator::applyFault(tree_(), *simulator::parseFault("ecc:6:3")).ok());
  const fs::path eccCounter = viewed(6, "stats/hardware/mem_ecc_uncorrected");
  ASSERT_TRUE(discovery::writeAttribute(eccCounter, "0\n").ok());
  EXPECT_EQ(readSmallFile(eccCounter).valueOr("?"), "3\n");
}

}  // namespace
}  // namespace torus::testing
