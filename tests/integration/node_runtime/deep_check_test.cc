// The deep check on simulated nodes, in process: a healthy node passes; each simulator knob
// (link-cut, slow-link, mem-corrupt) fails it with a message naming the pair or the device, and
// the verdict takes exactly those devices out of service; devices in use are skipped untouched.
#include "node-runtime/health/deep_check/deep_check.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/base/temp_dir.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/health/deep_check/check_command.h"
#include "node-runtime/health/deep_check/deep_check_report.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus::health {
namespace {

class DeepCheckTest : public ::testing::Test {
 protected:
  DeepCheckResult check(const std::string& type, const std::vector<std::string>& faults,
                        const topology::DeviceSet& busy = {}) {
    return check(type, faults, [busy] { return busy; });
  }
  // What the next check() sets up besides the faults.
  bool linkSpeedFiles_ = false;
  std::string command_;  // "stand-in": the simulator's nccom-test
  std::chrono::milliseconds commandTimeout_{60'000};
  std::function<int(const std::filesystem::path&)> openDevice_;  // unset: the real open
  DeepCheckResult check(const std::string& type, const std::vector<std::string>& faults,
                        const BusyDevices& busy) {
    auto dir = TempDir::create("deep-check");
    EXPECT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    simulator::SimulationSpec spec;
    spec.instanceType = type;
    spec.linkSpeedFiles = linkSpeedFiles_;
    for (const std::string& text : faults) {
      auto fault = simulator::parseFault(text);
      EXPECT_TRUE(fault.ok()) << text;
      spec.faults.push_back(*fault);
    }
    auto tree = simulator::writeSimulatedTree(spec, dir_->path());
    EXPECT_TRUE(tree.ok()) << tree.error().message;
    auto found = discovery::discoverNode(tree->roots(), {});
    EXPECT_TRUE(found.ok());
    DeepCheckOptions options;
    options.memoryBytes = 256 << 10;
    options.hostAllReduce.bytes = 256 << 10;
    options.hostAllReduce.timeout = std::chrono::seconds(10);
    options.command =
        command_ == "stand-in" ? simulator::standInCheckCommand(*tree).string() : command_;
    options.commandTimeout = commandTimeout_;
    options.openDevice = openDevice_;
    return runDeepCheck(found->node, tree->roots(), busy, options);
  }
  static std::string failuresOf(const DeepCheckResult& result) {
    std::string text;
    for (const std::string& failure : deepCheckFailures(result))
      text += failure + "\n";
    return text;
  }
  static std::vector<int> failedDevices(const DeepCheckResult& result) {
    std::vector<int> devices;
    for (const auto& [device, reason] : result.verdictByDevice()) {
      if (!reason.empty()) devices.push_back(device);
    }
    return devices;
  }
  std::optional<TempDir> dir_;
};

topology::DeviceSet inUse(std::initializer_list<int> devices) {
  topology::DeviceSet set;
  for (const int device : devices)
    set.insert(device);
  return set;
}

std::map<std::string, std::string> notCheckedOf(const DeepCheckResult& result) {
  std::map<std::string, std::string> parts;
  for (const NotChecked& item : result.notChecked)
    parts[item.part] = item.why;
  return parts;
}

// As the reference driver is: connected_devices but no link speed files, and no check command.
// What nothing measured is said, not passed.
TEST_F(DeepCheckTest, WithoutLinkSpeedsOrACommandThoseAreReportedNotChecked) {
  const DeepCheckResult result = check("trn1.32xlarge", {});
  EXPECT_TRUE(result.passed()) << failuresOf(result);
  EXPECT_EQ(result.devices.size(), 16U);
  EXPECT_EQ(result.links.size(), 32U);  // 4x4 torus, each listed by both ends
  for (const LinkCheck& link : result.links)
    EXPECT_FALSE(link.speed.has_value());
  EXPECT_TRUE(result.ringAlongLinks);
  EXPECT_TRUE(result.hostAllReduceSeconds.has_value());
  EXPECT_FALSE(result.command.has_value());
  const auto parts = notCheckedOf(result);
  EXPECT_EQ(parts.size(), 2U);
  EXPECT_NE(parts.at("link_speed").find("no trained speed"), std::string::npos);
  EXPECT_NE(parts.at("neuronlink_traffic").find("--deep-check-command"), std::string::npos);
  EXPECT_TRUE(failedDevices(result).empty());
}

TEST_F(DeepCheckTest, WithLinkSpeedsAndTheCommandEverythingIsChecked) {
  linkSpeedFiles_ = true;
  command_ = "stand-in";
  const DeepCheckResult result = check("trn1.32xlarge", {});
  EXPECT_TRUE(result.passed()) << failuresOf(result);
  for (const LinkCheck& link : result.links) {
    ASSERT_TRUE(link.speed.has_value()) << link.a << "-" << link.b;
    EXPECT_EQ(link.speed->current, 32.0);
  }
  ASSERT_TRUE(result.command.has_value());
  EXPECT_EQ(result.command->state, CheckState::kPassed) << result.command->detail;
  EXPECT_EQ(result.command->devices.size(), 16U);
  EXPECT_NE(result.command->output.find("passed"), std::string::npos) << result.command->output;
  EXPECT_TRUE(result.notChecked.empty());
}

// In the agent's container on a real node the devices' opens answer EPERM (the runtime grants
// them only to the containers they are allocated to): the command is not run, the part is "not
// checked" with the reason, and no idle chip fails for it. On the simulated node here (root, no
// device rules) the open answers ENXIO, which lets the command run, as the test above shows.
TEST_F(DeepCheckTest, ACommandWithoutAccessToTheDevicesIsNotRunAndFailsNothing) {
  command_ = "exit 1";  // would fail every device it was given, were it run
  std::vector<std::string> opened;
  openDevice_ = [&](const std::filesystem::path& node) {
    opened.push_back(node.filename().string());
    return EPERM;
  };
  const DeepCheckResult result = check("trn1.32xlarge", {});
  EXPECT_FALSE(result.command.has_value());
  const auto parts = notCheckedOf(result);
  ASSERT_EQ(parts.count("neuronlink_traffic"), 1U);
  EXPECT_NE(parts.at("neuronlink_traffic").find("may not open"), std::string::npos)
      << parts.at("neuronlink_traffic");
  EXPECT_NE(parts.at("neuronlink_traffic").find("Operation not permitted"), std::string::npos);
  EXPECT_TRUE(failedDevices(result).empty()) << failuresOf(result);
  EXPECT_TRUE(result.passed()) << failuresOf(result);
  EXPECT_EQ(opened.size(), 1U);  // the first refusal settles it
}

TEST_F(DeepCheckTest, AFailingCommandFailsTheDevicesItWasGiven) {
  command_ = "stand-in";
  const DeepCheckResult result = check("inf2.48xlarge", {}, inUse({7, 8}));
  ASSERT_TRUE(result.command.has_value());
  EXPECT_EQ(result.command->state, CheckState::kPassed) << result.command->detail;

  command_ = "echo 'allreduce: rank 3 timed out' >&2; exit 3";
  const DeepCheckResult failed = check("inf2.48xlarge", {}, inUse({7, 8}));
  ASSERT_TRUE(failed.command.has_value());
  EXPECT_EQ(failed.command->state, CheckState::kFailed);
  EXPECT_EQ(failed.command->exitCode, 3)
      << failed.command->detail << " output: " << failed.command->output;
  EXPECT_NE(failed.command->detail.find("exited 3"), std::string::npos) << failed.command->detail;
  EXPECT_NE(failed.command->detail.find("rank 3 timed out"), std::string::npos);
  std::vector<int> expected;
  for (int d = 0; d < 12; ++d) {
    if (d != 7 && d != 8) expected.push_back(d);
  }
  EXPECT_EQ(failedDevices(failed), expected);  // the ones it was given, not those in use

  command_ = "sleep 30";
  commandTimeout_ = std::chrono::milliseconds(300);
  const auto started = std::chrono::steady_clock::now();
  const DeepCheckResult hung = check("inf2.48xlarge", {});
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  ASSERT_TRUE(hung.command.has_value());
  EXPECT_EQ(hung.command->state, CheckState::kFailed);
  EXPECT_NE(hung.command->detail.find("did not finish within 300 ms"), std::string::npos);
}

TEST_F(DeepCheckTest, TheStandInCommandFailsAcrossACutLink) {
  command_ = "stand-in";
  const DeepCheckResult result = check("inf2.48xlarge", {"link-cut:0-1"});
  // The ring order goes round the cut, so the collective over it passes; the link is still
  // reported down by the driver's lists.
  ASSERT_TRUE(result.command.has_value());
  EXPECT_EQ(result.command->state, CheckState::kPassed) << result.command->detail;
  EXPECT_NE(failuresOf(result).find("NeuronLink 0-1 is down"), std::string::npos);
  // Asked to go across it, the stand-in fails and names the pair.
  const CommandOutcome across = runCheckCommand(
      simulator::standInCheckCommand(simulator::SimulatedTree{.root = dir_->path()}),
      {{"TORUS_DEEP_CHECK_RING", "0 1"}}, std::chrono::seconds(10));
  EXPECT_FALSE(across.passed);
  EXPECT_EQ(across.exitCode, 1);
  EXPECT_NE(across.output.find("neuron0 cannot reach neuron1"), std::string::npos) << across.output;
}

TEST_F(DeepCheckTest, LinkCutNamesThePairAndFailsBothEnds) {
  const DeepCheckResult result = check("trn1.32xlarge", {"link-cut:3-7"});
  EXPECT_FALSE(result.passed());
  EXPECT_EQ(failuresOf(result),
            "NeuronLink 3-7 is down: neuron3 and neuron7 no longer list each other in "
            "connected_devices\n");
  EXPECT_EQ(failedDevices(result), (std::vector<int>{3, 7}));
  EXPECT_NE(result.verdictByDevice().at(3).find("NeuronLink 3-7"), std::string::npos);
  EXPECT_TRUE(result.ringAlongLinks);  // the ring goes round the cut
}

// A driver that reports link speeds (the simulator's slow-link fault writes them for its link).
TEST_F(DeepCheckTest, SlowLinkNamesThePairAndItsTrainedSpeed) {
  const DeepCheckResult result = check("trn1.32xlarge", {"slow-link:0-1:4"});
  const std::string failures = failuresOf(result);
  EXPECT_NE(failures.find("NeuronLink 0-1 is slow: trained at 8.0 of 32.0 GT/s"), std::string::npos)
      << failures;
  EXPECT_EQ(failedDevices(result), (std::vector<int>{0, 1}));
}

TEST_F(DeepCheckTest, CorruptMemoryNamesTheDeviceThePatternAndTheOffset) {
  const DeepCheckResult result = check("inf2.48xlarge", {"mem-corrupt:5"});
  const std::string failures = failuresOf(result);
  EXPECT_NE(failures.find("neuron5 device memory "), std::string::npos) << failures;
  EXPECT_NE(failures.find("resource4 walking-ones: 32768 of 32768 words differ; first at offset "),
            std::string::npos)
      << failures;
  EXPECT_EQ(failedDevices(result), (std::vector<int>{5}));
}

TEST_F(DeepCheckTest, DevicesInUseAreSkippedAndSaySo) {
  topology::DeviceSet busy;
  busy.insert(2);
  const DeepCheckResult result = check("inf2.48xlarge", {"mem-corrupt:2"}, busy);
  EXPECT_TRUE(result.passed()) << failuresOf(result);  // the corrupt device was not touched
  EXPECT_EQ(result.devices[2].state, CheckState::kSkipped);
  EXPECT_EQ(result.devices[2].detail, "in use by a container or process; not touched");
  EXPECT_EQ(result.verdictByDevice().count(2), 0U);
  for (const LinkCheck& link : result.links) {
    if (link.a == 2 || link.b == 2) {
      EXPECT_EQ(link.state, CheckState::kSkipped);
    }
  }
  EXPECT_EQ(result.ring.size(), 11U);
}

// Regression: the busy set was read once, so a device allocated during a run was still driven.
TEST_F(DeepCheckTest, ADeviceAllocatedDuringTheRunIsLeftAloneFromTheNextPhaseOn) {
  int asked = 0;
  const DeepCheckResult result = check("inf2.48xlarge", {}, [&asked] {
    topology::DeviceSet busy;
    if (asked++ > 0) busy.insert(5);  // idle for the memory phase, allocated from then on
    return busy;
  });
  EXPECT_GE(asked, 3);  // before memory, before the links, after the links
  EXPECT_TRUE(result.passed()) << failuresOf(result);
  EXPECT_EQ(result.devices[5].state, CheckState::kPassed);  // its memory was tested while idle
  EXPECT_EQ(result.devices[5].detail,
            "allocated during the check: memory tested, the later parts left it alone");
  EXPECT_EQ(std::count(result.ring.begin(), result.ring.end(), 5), 0);
  EXPECT_EQ(result.ring.size(), 11U);
  for (const LinkCheck& link : result.links) {
    if (link.a == 5 || link.b == 5) {
      EXPECT_EQ(link.state, CheckState::kSkipped);
    }
  }
}

TEST_F(DeepCheckTest, SingleDeviceNodeTestsMemoryAndRunsNoRing) {
  const DeepCheckResult result = check("inf2.xlarge", {});
  EXPECT_TRUE(result.passed()) << failuresOf(result);
  EXPECT_TRUE(result.links.empty());
  EXPECT_FALSE(result.hostAllReduceSeconds.has_value());
  EXPECT_EQ(notCheckedOf(result).count("host_allreduce"), 1U);
}

}  // namespace
}  // namespace torus::health
