// The simulated driver's reset and attribute stores (what neuron-sim-driver answers through
// neuronN/...), on a simulated tree and a clock the test moves. As the driver (aws-neuron-driver
// 2.24.7.0): any write to reset starts one, which reads 0 at once and then READY or INVALID; a
// write while a process holds the device (other than write-only) is ignored, and one while a reset
// is pending is dropped; each request counts in every core's reset_req_count, a failed reset in
// reset_fail_count; metric files clear or ignore what is written. And the simulator's model of the
// firmware: a reset that ends READY repairs an HBM error that was pending repair when it began.
#include "node-runtime/simulator/sim_reset.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/unique_fd.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus::simulator {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class SimReset : public ::testing::Test {
 protected:
  void SetUp() override {
    auto created = TempDir::create("sim-reset");
    ASSERT_TRUE(created.ok());
    dir_.emplace(std::move(*created));
    SimulationSpec spec;
    spec.instanceType = "inf2.24xlarge";  // 6 devices of 2 cores: small, and with ECC counters
    auto tree = writeSimulatedTree(spec, dir_->path());
    ASSERT_TRUE(tree.ok()) << tree.error().message;
    roots_ = tree->roots();
  }

  SimulatedResets resets(const std::string& procRoot = "/proc") {
    return SimulatedResets(
        {dir_->path(), milliseconds(300), procRoot, roots_.dev, [this] { return now_; }});
  }
  void advance(milliseconds by) { now_ += by; }
  fs::path root() const { return dir_->path(); }
  // A file of neuronN in the tree the simulated driver serves.
  fs::path deviceFile(int device, const std::string& relative) const {
    return roots_.sys / "devices" / "virtual" / "neuron_device" /
           ("neuron" + std::to_string(device)) / relative;
  }
  std::string treeText(int device, const std::string& relative) const {
    return readSmallFile(deviceFile(device, relative)).valueOr("(unreadable)");
  }
  std::string coreCounter(int device, int core, const std::string& counter,
                          const char* value = "total") const {
    return treeText(device, "neuron_core" + std::to_string(core) + "/stats/other_info/" + counter +
                                "/" + value);
  }
  const discovery::DiscoveryRoots& roots() const { return roots_; }

 private:
  std::optional<TempDir> dir_;
  discovery::DiscoveryRoots roots_;
  std::chrono::steady_clock::time_point now_{};
};

TEST_F(SimReset, AResetReadsZeroAtOnceForItsDurationThenReady) {
  SimulatedResets driver = resets();
  EXPECT_EQ(driver.read(0), "1\n");
  EXPECT_EQ(driver.write(0, "1\n"), ResetRequest::kStarted);
  EXPECT_EQ(driver.read(0), "0\n");
  advance(milliseconds(299));
  EXPECT_EQ(driver.read(0), "0\n");
  EXPECT_EQ(driver.read(1), "1\n");  // the other device was never reset
  advance(milliseconds(1));
  EXPECT_EQ(driver.read(0), "1\n");
  EXPECT_EQ(driver.counts().started, 1);
}

// driver_reset_store never reads what was written (neuron_cdev.c:2979-2990).
TEST_F(SimReset, AWriteOfAnyContentStartsAReset) {
  SimulatedResets driver = resets();
  int device = 0;
  for (const char* text : {"1\n", "0", "", "reset", "2\n", "11"}) {
    const int target = device++ % 6;
    advance(milliseconds(300));  // the previous reset of `target` has ended
    EXPECT_EQ(driver.write(target, text), ResetRequest::kStarted) << '"' << text << '"';
    EXPECT_EQ(driver.read(target), "0\n") << '"' << text << '"';
  }
  EXPECT_EQ(driver.counts().started, 6);
}

// nr_start_ncs drops a request while the device's is still pending (neuron_reset.c:261-265): the
// running reset keeps its end, and is counted once.
TEST_F(SimReset, ARequestWhileOneIsPendingIsDroppedNotRestarted) {
  SimulatedResets driver = resets();
  ASSERT_EQ(driver.write(2, "1"), ResetRequest::kStarted);
  advance(milliseconds(200));
  EXPECT_EQ(driver.write(2, "1"), ResetRequest::kDroppedWhilePending);
  advance(milliseconds(100));
  EXPECT_EQ(driver.read(2), "1\n");  // at the first request's end, not 200 ms later
  EXPECT_EQ(driver.counts().started, 1);
  EXPECT_EQ(driver.counts().droppedWhilePending, 1);
  EXPECT_EQ(coreCounter(2, 0, "reset_req_count"), "1\n");
  // Once it has ended, the next request starts a reset again.
  EXPECT_EQ(driver.write(2, "1"), ResetRequest::kStarted);
  EXPECT_EQ(driver.read(2), "0\n");
  EXPECT_EQ(coreCounter(2, 0, "reset_req_count"), "2\n");
}

// nr_start_ncs counts the request in every core's reset_req_count as it sets state RESET
// (neuron_reset.c:267-279): total + 1, present = 1 (neuron_sysfs_metrics.c:1033-1034).
TEST_F(SimReset, EachRequestCountsInEveryCoresResetReqCountAtOnce) {
  SimulatedResets driver = resets();
  ASSERT_EQ(driver.write(3, "1"), ResetRequest::kStarted);
  for (const int core : {0, 1}) {
    EXPECT_EQ(coreCounter(3, core, "reset_req_count"), "1\n") << core;
    EXPECT_EQ(coreCounter(3, core, "reset_req_count", "present"), "1\n") << core;
    EXPECT_EQ(coreCounter(3, core, "reset_fail_count"), "0\n") << core;
  }
  EXPECT_EQ(driver.read(3), "0\n");
  EXPECT_EQ(coreCounter(4, 0, "reset_req_count"), "0\n");  // another device's cores
  advance(milliseconds(300));
  ASSERT_EQ(driver.write(3, "1"), ResetRequest::kStarted);
  EXPECT_EQ(coreCounter(3, 1, "reset_req_count"), "2\n");
}

// A failed reset counts in every core's reset_fail_count when it ends (neuron_reset.c:121,131,139)
// and repairs nothing.
TEST_F(SimReset, AFailedResetCountsInResetFailCountWhenItEndsAndRepairsNothing) {
  SimulatedResets driver = resets();
  ASSERT_TRUE(writeFile(resetBehaviourFile(root(), 1), "fail\n").ok());
  ASSERT_TRUE(
      writeFile(deviceFile(1, "stats/hardware/mem_ecc_repairable_uncorrected"), "4\n").ok());
  ASSERT_EQ(driver.write(1, "1"), ResetRequest::kStarted);
  advance(milliseconds(299));
  EXPECT_EQ(driver.read(1), "0\n");
  EXPECT_EQ(coreCounter(1, 0, "reset_fail_count"), "0\n");
  advance(milliseconds(1));
  driver.settle(1);  // as the FUSE server does before reading any file of neuron1
  for (const int core : {0, 1}) {
    EXPECT_EQ(coreCounter(1, core, "reset_fail_count"), "1\n") << core;
    EXPECT_EQ(coreCounter(1, core, "reset_fail_count", "present"), "1\n") << core;
  }
  EXPECT_EQ(driver.read(1), "2\n");
  EXPECT_EQ(coreCounter(1, 0, "reset_fail_count"), "1\n");  // counted once, not at every read
  EXPECT_EQ(treeText(1, "stats/hardware/mem_ecc_repairable_uncorrected"), "4\n");
}

TEST_F(SimReset, AResetEndingReadyRepairsAnHbmErrorPendingRepair) {
  SimulatedResets driver = resets();
  ASSERT_TRUE(
      writeFile(deviceFile(0, "stats/hardware/mem_ecc_repairable_uncorrected"), "3\n").ok());
  ASSERT_TRUE(writeFile(deviceFile(0, "stats/hardware/mem_ecc_uncorrected"), "2\n").ok());
  ASSERT_EQ(driver.write(0, "1"), ResetRequest::kStarted);
  EXPECT_EQ(treeText(0, "stats/hardware/mem_ecc_repairable_uncorrected"), "3\n");
  advance(milliseconds(300));
  EXPECT_EQ(driver.read(0), "1\n");
  EXPECT_EQ(treeText(0, "stats/hardware/mem_ecc_repairable_uncorrected"), "0\n");
  EXPECT_EQ(treeText(0, "stats/hardware/mem_ecc_uncorrected"), "2\n");  // not repairable
  // A device without the counter (an inf1's driver has none) does not get one.
  fs::remove(deviceFile(5, "stats/hardware/mem_ecc_repairable_uncorrected"));
  ASSERT_EQ(driver.write(5, "1"), ResetRequest::kStarted);
  advance(milliseconds(300));
  EXPECT_EQ(driver.read(5), "1\n");
  EXPECT_FALSE(fs::exists(deviceFile(5, "stats/hardware/mem_ecc_repairable_uncorrected")));
}

// The repair is of what awaited it when the reset was asked for: an error that comes while the
// reset runs is still counted after it, and the next reset repairs it.
TEST_F(SimReset, AnHbmErrorThatComesDuringAResetWaitsForTheNextOne) {
  SimulatedResets driver = resets();
  const std::string counter = "stats/hardware/mem_ecc_repairable_uncorrected";
  ASSERT_EQ(driver.write(2, "1"), ResetRequest::kStarted);
  advance(milliseconds(100));
  ASSERT_TRUE(writeFile(deviceFile(2, counter), "1\n").ok());
  advance(milliseconds(200));
  EXPECT_EQ(driver.read(2), "1\n");
  EXPECT_EQ(treeText(2, counter), "1\n");
  ASSERT_EQ(driver.write(2, "1"), ResetRequest::kStarted);
  advance(milliseconds(300));
  EXPECT_EQ(driver.read(2), "1\n");
  EXPECT_EQ(treeText(2, counter), "0\n");
}

TEST_F(SimReset, BehaviourFilesMakeAResetSlowOrFailAndAreReadAtEachReset) {
  SimulatedResets driver = resets();
  ASSERT_TRUE(writeFile(resetBehaviourFile(root(), 0), "fail\n").ok());
  ASSERT_EQ(driver.write(0, "1"), ResetRequest::kStarted);
  advance(milliseconds(300));
  EXPECT_EQ(driver.read(0), "2\n");  // INVALID, and it stays so
  advance(milliseconds(5000));
  EXPECT_EQ(driver.read(0), "2\n");
  ASSERT_TRUE(writeFile(resetBehaviourFile(root(), 0), "slow 2000\n").ok());
  ASSERT_EQ(driver.write(0, "1"), ResetRequest::kStarted);
  advance(milliseconds(1999));
  EXPECT_EQ(driver.read(0), "0\n");
  advance(milliseconds(1));
  EXPECT_EQ(driver.read(0), "1\n");  // a good reset heals an INVALID device
  EXPECT_EQ(driver.counts().failed, 1);
}

TEST_F(SimReset, BadBehaviourFilesFallBackToTheDefault) {
  SimulatedResets driver = resets();
  ASSERT_TRUE(writeFile(resetBehaviourFile(root(), 1), "melt\n").ok());
  ASSERT_EQ(driver.write(1, "1"), ResetRequest::kStarted);
  advance(milliseconds(300));
  EXPECT_EQ(driver.read(1), "1\n");
}

TEST_F(SimReset, AWriteWhileTheDeviceIsOpenIsIgnoredAndCountsNothing) {
  SimulatedResets driver = resets();
  {
    // O_PATH: the simulated node has no driver to open; the /proc link is what the scan sees.
    const UniqueFd holder(::open(roots().deviceNode(0).c_str(), O_PATH | O_CLOEXEC));
    ASSERT_TRUE(holder.valid());
    // Accepted, and nothing happens: no error either.
    EXPECT_EQ(driver.write(0, "1"), ResetRequest::kIgnoredWhileHeld);
    EXPECT_EQ(driver.read(0), "1\n");
    EXPECT_EQ(driver.counts().ignoredWhileHeld, 1);
    EXPECT_EQ(driver.counts().started, 0);
    EXPECT_EQ(coreCounter(0, 0, "reset_req_count"), "0\n");
  }
  EXPECT_EQ(driver.write(0, "1"), ResetRequest::kStarted);
  EXPECT_EQ(driver.read(0), "0\n");
}

// ncdev_open raises open_count, which blocks the reset, for every open but a write-only one
// (neuron_cdev.c:50,2822-2830). A fake /proc: pid 4242 holds neuron0 as fd 3, opened with the
// fdinfo flags (octal) of each case.
TEST_F(SimReset, OnlyAnOpenThatIsNotWriteOnlyBlocksAReset) {
  struct Case {
    const char* what;
    const char* flags;
    ResetRequest expected;
  };
  const Case cases[] = {
      {"O_WRONLY", "01", ResetRequest::kStarted},
      {"O_WRONLY|O_CLOEXEC", "02000001", ResetRequest::kStarted},
      {"O_RDWR", "02", ResetRequest::kIgnoredWhileHeld},
      {"O_RDWR|O_CLOEXEC", "02000002", ResetRequest::kIgnoredWhileHeld},
      {"O_RDONLY", "00", ResetRequest::kIgnoredWhileHeld},
  };
  for (const Case& c : cases) {
    const fs::path proc = root() / "proc";
    fs::remove_all(proc);
    ASSERT_TRUE(writeFile(proc / "4242" / "comm", "python\n").ok());
    ASSERT_TRUE(writeFile(proc / "4242" / "fdinfo" / "3",
                          std::string("pos:\t0\nflags:\t") + c.flags + "\nmnt_id:\t25\n")
                    .ok());
    fs::create_directories(proc / "4242" / "fd");
    fs::create_symlink(roots().deviceNode(0), proc / "4242" / "fd" / "3");
    SimulatedResets driver = resets(proc.string());
    EXPECT_EQ(driver.write(0, "1"), c.expected) << c.what;
    EXPECT_EQ(driver.read(0), c.expected == ResetRequest::kStarted ? "0\n" : "1\n") << c.what;
    advance(milliseconds(300));
    EXPECT_EQ(driver.read(0), "1\n") << c.what;
  }
}

// Modes and stores as the driver registers them: neuron_cdev.c:2993,3002,3037 and
// neuron_sysfs_metrics.c:402-511.
TEST(DriverAttribute, ModesAndStoresAreTheDriversOwn) {
  struct Case {
    const char* path;
    int device;
    unsigned mode;
    AttributeStore store;
  };
  const Case cases[] = {
      {"/neuron3/reset", 3, 0600, AttributeStore::kReset},
      {"/neuron3/core_count", 3, 0400, AttributeStore::kNone},
      {"/neuron12/connected_devices", 12, 0400, AttributeStore::kNone},
      {"/neuron3/dev", 3, 0444, AttributeStore::kNone},
      {"/neuron3/uevent", 3, 0444, AttributeStore::kNone},
      {"/neuron3/stats/hardware/mem_ecc_uncorrected", 3, 0644, AttributeStore::kIgnored},
      {"/neuron3/stats/hardware/mem_ecc_repairable_uncorrected", 3, 0644, AttributeStore::kIgnored},
      {"/neuron3/stats/power/utilization", 3, 0644, AttributeStore::kIgnored},
      {"/neuron3/info/serial_number", 3, 0644, AttributeStore::kIgnored},
      {"/neuron3/info/architecture/arch_type", 3, 0644, AttributeStore::kIgnored},
      {"/neuron3/info/notify_delay", 3, 0644, AttributeStore::kNotifyDelay},
      {"/neuron3/stats/memory_usage/host_mem/tensors/peak", 3, 0644, AttributeStore::kClearCounter},
      {"/neuron3/neuron_core1/stats/other_info/reset_req_count/total", 3, 0644,
       AttributeStore::kClearCounter},
      {"/neuron3/neuron_core1/stats/status/hw_error/present", 3, 0644,
       AttributeStore::kClearCounter},
      {"/neuron3/neuron_core1/info/architecture/arch_type", 3, 0644, AttributeStore::kIgnored},
      {"/neuron3/neuron_link/neuron4/max_link_speed", 3, 0444, AttributeStore::kNone},
      {"/neuron3/neuron_corex/stats/x/total", 3, 0444, AttributeStore::kNone},
      {"/neuron64/reset", -1, 0444, AttributeStore::kNone},
      {"/neuron03/reset", -1, 0444, AttributeStore::kNone},
      {"/other", -1, 0444, AttributeStore::kNone},
  };
  for (const Case& c : cases) {
    const DriverAttribute attribute = driverAttribute(c.path);
    EXPECT_EQ(attribute.device, c.device) << c.path;
    EXPECT_EQ(attribute.mode, c.mode) << c.path;
    EXPECT_EQ(attribute.store, c.store) << c.path;
  }
}

TEST_F(SimReset, MetricWritesClearCountersAndOtherMetricFilesIgnoreThem) {
  SimulatedResets driver = resets();
  const std::string counter = "neuron_core1/stats/status/hw_error/total";
  ASSERT_TRUE(writeFile(deviceFile(2, counter), "17\n").ok());
  driver.writeMetric("/neuron2/" + counter, AttributeStore::kClearCounter, "whatever");
  EXPECT_EQ(treeText(2, counter), "0\n");
  ASSERT_TRUE(writeFile(deviceFile(2, "stats/hardware/mem_ecc_uncorrected"), "5\n").ok());
  driver.writeMetric("/neuron2/stats/hardware/mem_ecc_uncorrected", AttributeStore::kIgnored,
                     "0\n");
  EXPECT_EQ(treeText(2, "stats/hardware/mem_ecc_uncorrected"), "5\n");
}

// The notify flag is the driver's, not a device's (neuron_sysfs_metrics.c:63): 0 or -1 written to
// any device's notify_delay shows in every device's; anything else is ignored (:458-468).
TEST_F(SimReset, NotifyDelayTakesZeroOrMinusOneForEveryDevice) {
  SimulatedResets driver = resets();
  const auto delays = [&] {
    std::string all;
    for (int device = 0; device < 6; ++device)
      all += treeText(device, "info/notify_delay");
    return all;
  };
  EXPECT_EQ(delays(), "-1\n-1\n-1\n-1\n-1\n-1\n");
  driver.writeMetric("/neuron4/info/notify_delay", AttributeStore::kNotifyDelay, "0\n");
  EXPECT_EQ(delays(), "0\n0\n0\n0\n0\n0\n");
  for (const char* ignored : {"5", " -1", "-1\n\n", "", "x", "+-1", "-1 "}) {
    driver.writeMetric("/neuron1/info/notify_delay", AttributeStore::kNotifyDelay, ignored);
    EXPECT_EQ(delays(), "0\n0\n0\n0\n0\n0\n") << '"' << ignored << '"';
  }
  driver.writeMetric("/neuron1/info/notify_delay", AttributeStore::kNotifyDelay, "-001");
  EXPECT_EQ(delays(), "-1\n-1\n-1\n-1\n-1\n-1\n");
}

TEST(ResetBehaviour, ParsesItsThreeForms) {
  const milliseconds standard(300);
  EXPECT_TRUE(parseResetBehaviour("fail", standard)->fails);
  EXPECT_EQ(parseResetBehaviour("fail", standard)->duration, standard);
  EXPECT_EQ(parseResetBehaviour("fail 50\n", standard)->duration, milliseconds(50));
  EXPECT_FALSE(parseResetBehaviour("slow 4000", standard)->fails);
  EXPECT_EQ(parseResetBehaviour("slow 4000", standard)->duration, milliseconds(4000));
  for (const char* text : {"", "slow", "slow x", "fail -1", "fast 3", "slow 1 2", "700000"}) {
    EXPECT_FALSE(parseResetBehaviour(text, standard).ok()) << text;
  }
}

}  // namespace
}  // namespace torus::simulator
