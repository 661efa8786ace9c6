// The deep check on simulated nodes, in process: a healthy node passes; each simulator knob
// (link-cut, slow-link, mem-corrupt) fails it with a message naming the pair or the device, and
// the verdict takes exactly those devices out of service; devices in use are skipped untouched.
#include "node-runtime/runtime/deep_check.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/base/temp_dir.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/runtime/deep_check_report.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus::runtime {
namespace {

class DeepCheckTest : public ::testing::Test {
 protected:
  DeepCheckResult check(const std::string& type, const std::vector<std::string>& faults,
                        const topology::DeviceSet& busy = {}) {
    return check(type, faults, [busy] { return busy; });
  }
  DeepCheckResult check(const std::string& type, const std::vector<std::string>& faults,
                        const BusyDevices& busy) {
    auto dir = TempDir::create("deep-check");
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
    auto found = discovery::discoverNode(tree->roots(), {});
    EXPECT_TRUE(found.ok());
    DeepCheckOptions options;
    options.memoryBytes = 256 << 10;
    options.links.transferBytes = 64 << 10;
    options.links.allReduceBytes = 256 << 10;
    options.links.timeout = std::chrono::seconds(10);
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

TEST_F(DeepCheckTest, HealthyTrn1PassesWithEveryLinkTimedAndTheRingAlongNeuronLink) {
  const DeepCheckResult result = check("trn1.32xlarge", {});
  EXPECT_TRUE(result.passed()) << failuresOf(result);
  EXPECT_EQ(result.devices.size(), 16U);
  EXPECT_EQ(result.links.size(), 32U);  // 4x4 torus
  for (const LinkCheck& link : result.links)
    EXPECT_TRUE(link.seconds.has_value()) << link.a << "-" << link.b;
  EXPECT_TRUE(result.ringAlongLinks);
  EXPECT_TRUE(result.allReduceSeconds.has_value());
  EXPECT_TRUE(failedDevices(result).empty());
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

// Probe row 8: the busy set was read once, so a device allocated during a run was still driven.
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
            "allocated during the check: memory tested, links and AllReduce left alone");
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
  EXPECT_FALSE(result.allReduceSeconds.has_value());
}

}  // namespace
}  // namespace torus::runtime
