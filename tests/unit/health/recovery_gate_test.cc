// The recovery gate: a device whose fault clears stays out until an attempt (reset + self-test)
// succeeds; a failed attempt keeps it out with the problem; a new fault replaces the cause.
#include "node-runtime/health/recovery_gate.h"

#include <gtest/gtest.h>

#include "node-runtime/discovery/device_scan.h"

namespace torus::health {
namespace {

topology::Node nodeOf(int devices) {
  topology::Node node;
  for (int i = 0; i < devices; ++i) {
    topology::Device device;
    device.index = i;
    node.devices.push_back(device);
  }
  return node;
}

// The node as the health signals describe it: `faulty` unhealthy with `reason`, the rest fine.
topology::Node signals(int devices, int faulty = -1, const std::string& reason = "") {
  topology::Node node = nodeOf(devices);
  if (faulty >= 0) {
    node.devices[static_cast<std::size_t>(faulty)].health = topology::DeviceHealth::unhealthy(
        topology::HealthDimension::kDeviceLost, "AttributeInvalid", reason);
  }
  return node;
}

TEST(RecoveryGate, ADeviceThatNeverFailedIsUntouched) {
  RecoveryGate gate;
  topology::Node node = signals(4);
  gate.apply(node);
  for (const auto& device : node.devices)
    EXPECT_TRUE(device.health.healthy);
  EXPECT_TRUE(gate.waiting().empty());
}

TEST(RecoveryGate, AClearedFaultWaitsForASuccessfulAttempt) {
  RecoveryGate gate;
  topology::Node faulted = signals(4, 2, "neuron2 mem_ecc_uncorrected=1");
  gate.apply(faulted);
  EXPECT_FALSE(faulted.devices[2].health.healthy);
  EXPECT_EQ(faulted.devices[2].health.reason, "neuron2 mem_ecc_uncorrected=1");
  EXPECT_TRUE(gate.waiting().empty()) << "a live fault is not waiting for recovery";

  topology::Node quiet = signals(4);
  gate.apply(quiet);
  EXPECT_FALSE(quiet.devices[2].health.healthy);
  EXPECT_TRUE(quiet.devices[2].health.reason.starts_with(kRecoveringPrefix));
  EXPECT_NE(quiet.devices[2].health.reason.find("neuron2 mem_ecc_uncorrected=1"), std::string::npos)
      << "the reason keeps the cause: " << quiet.devices[2].health.reason;
  EXPECT_TRUE(quiet.devices[1].health.healthy);
  EXPECT_EQ(gate.waiting().ids(), std::vector<int>{2});

  gate.record(2, okResult());
  topology::Node back = signals(4);
  gate.apply(back);
  EXPECT_TRUE(back.devices[2].health.healthy);
  EXPECT_TRUE(gate.waiting().empty());
  // Once back, it stays back.
  topology::Node later = signals(4);
  gate.apply(later);
  EXPECT_TRUE(later.devices[2].health.healthy);
}

TEST(RecoveryGate, AFailedAttemptKeepsTheDeviceOutWithTheProblem) {
  RecoveryGate gate;
  topology::Node faulted = signals(2, 1, "kernel log NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR");
  gate.apply(faulted);
  topology::Node quiet = signals(2);
  gate.apply(quiet);
  gate.record(1, Result<void>(makeError(ErrorCode::kUnavailable,
                                        "self-test: device memory: pattern 0x55 mismatch")));
  topology::Node still = signals(2);
  gate.apply(still);
  const std::string& reason = still.devices[1].health.reason;
  EXPECT_FALSE(still.devices[1].health.healthy);
  EXPECT_TRUE(reason.starts_with(kRecoveryFailedPrefix)) << reason;
  EXPECT_NE(reason.find("pattern 0x55 mismatch"), std::string::npos) << reason;
  EXPECT_NE(reason.find("SRAM_UNCORRECTABLE_ERROR"), std::string::npos) << reason;
  EXPECT_EQ(gate.waiting().ids(), std::vector<int>{1}) << "it is tried again";

  gate.record(1, okResult());
  topology::Node back = signals(2);
  gate.apply(back);
  EXPECT_TRUE(back.devices[1].health.healthy);
}

// An attempt reported while the fault is live again (it came back during the reset) does not
// let the device in; the new fault becomes the cause and earlier attempts are forgotten.
TEST(RecoveryGate, ANewFaultReplacesTheCauseAndVoidsAttempts) {
  RecoveryGate gate;
  topology::Node first = signals(3, 0, "first fault");
  gate.apply(first);
  topology::Node quiet = signals(3);
  gate.apply(quiet);
  gate.record(0, Result<void>(makeError(ErrorCode::kUnavailable, "reset: state INVALID")));
  topology::Node again = signals(3, 0, "second fault");
  gate.apply(again);
  EXPECT_EQ(again.devices[0].health.reason, "second fault");
  gate.record(0, okResult());  // ignored: the fault is live
  topology::Node quietAgain = signals(3);
  gate.apply(quietAgain);
  const std::string& reason = quietAgain.devices[0].health.reason;
  EXPECT_TRUE(reason.starts_with(kRecoveringPrefix)) << reason;
  EXPECT_NE(reason.find("second fault"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("INVALID"), std::string::npos) << "the earlier attempt is forgotten";
}

// The monitor starts some passes from the last published node; the gate's own reason carried
// over is not a new fault.
TEST(RecoveryGate, ItsOwnReasonCarriedOverIsNotANewFault) {
  RecoveryGate gate;
  topology::Node faulted = signals(2, 1, "device node /dev/neuron1 is missing");
  gate.apply(faulted);
  topology::Node quiet = signals(2);
  gate.apply(quiet);
  topology::Node carried = quiet;  // device 1 unhealthy with the gate's reason
  gate.apply(carried);
  EXPECT_EQ(carried.devices[1].health.reason, quiet.devices[1].health.reason);
  EXPECT_EQ(gate.waiting().ids(), std::vector<int>{1});
  gate.record(1, okResult());
  topology::Node back = quiet;
  gate.apply(back);
  EXPECT_TRUE(back.devices[1].health.healthy);
}

// trn2's HBM error awaiting repair cannot go quiet by itself: a reset repairs it. The device
// waits for its reset at once, keeps its live cause while it waits, comes back when the counter
// clears after a successful reset, and is tried again when a reset left it pending.
TEST(RecoveryGate, AFaultAResetRepairsIsResetWhileLive) {
  const auto repairPending = [] {
    topology::Node node = nodeOf(2);
    node.devices[1].health = topology::DeviceHealth::unhealthy(
        topology::HealthDimension::kEccUncorrected, std::string(discovery::kHbmRepairPendingCode),
        "stats/hardware/mem_ecc_repairable_uncorrected is 1");
    return node;
  };
  RecoveryGate gate;
  topology::Node live = repairPending();
  gate.apply(live);
  EXPECT_FALSE(live.devices[1].health.healthy);
  EXPECT_EQ(gate.waiting().ids(), std::vector<int>{1});

  gate.record(1, okResult());
  topology::Node stillPending = repairPending();
  gate.apply(stillPending);
  EXPECT_FALSE(stillPending.devices[1].health.healthy);
  EXPECT_EQ(gate.waiting().ids(), std::vector<int>{1}) << "tried again";

  gate.record(1, okResult());
  topology::Node repaired = signals(2);
  gate.apply(repaired);
  EXPECT_TRUE(repaired.devices[1].health.healthy);
  EXPECT_TRUE(gate.waiting().empty());

  // Any other live fault still waits for its signal to go quiet.
  topology::Node other = signals(2, 1, "neuron1 mem_ecc_uncorrected=1");
  gate.apply(other);
  EXPECT_TRUE(gate.waiting().empty());
}

}  // namespace
}  // namespace torus::health
