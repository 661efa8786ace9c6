// RecoveryGate: a device that left service comes back only after a reset and a passing
// self-test, not merely because the signal that took it out went quiet. A cleared ECC counter or
// a kernel error that aged out says nothing about whether the chip works now; a reset and a
// memory pattern test do. (NVIDIA's DRA driver never removes its health taints; the device
// plugin used to return a device as soon as its cause cleared.)
//
// The gate sits between the health signals and the published node: a device they call
// unhealthy is remembered with its reason; while a remembered device's signals are quiet it
// stays out of service as "recovering", until record() reports a successful attempt. A failed
// attempt keeps it out with the problem in its reason; a new fault replaces the remembered cause.
//
// Owns: which devices wait, why they left, the last attempt's problem. Does not own: running the
// reset and the self-test (agent/device_recovery.h) or locking (the NodeMonitor's mutex).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "common/topology/node.h"

namespace torus::health {

// How the gate's reasons begin, so that tools (DRA taint values, dashboards) can tell a device
// waiting for recovery, or one whose recovery failed, from one with a live fault.
inline constexpr std::string_view kRecoveringPrefix = "recovering:";
inline constexpr std::string_view kRecoveryFailedPrefix = "recovery failed:";

// A device whose only fault is one a reset repairs (discovery::kHbmRepairPendingCode) is reset
// without waiting for its signal to go quiet, and comes back once the signal clears.
class RecoveryGate {
 public:
  // Applies the gate to `next`, the node as the health signals describe it now.
  void apply(topology::Node& next);
  // Devices whose signals are quiet and that wait for a reset and a self-test, and devices whose
  // only fault a reset repairs, as of the last apply().
  topology::DeviceSet waiting() const;
  // The outcome of an attempt on `device`: success lets it back at the next apply(); an error
  // (its message names the step: "reset: ..." or "self-test: ...") keeps it out with the
  // message in its reason. Devices the gate does not hold are ignored.
  void record(int device, const Result<void>& outcome);

 private:
  struct Entry {
    std::string cause;      // the reason it left service
    std::string problem;    // the last failed attempt's message; empty before any
    std::string published;  // the reason this gate last gave the device
    bool signalsQuiet = false;
    bool repairable = false;  // its live fault is one a reset repairs
    bool recovered = false;
  };
  std::map<int, Entry> entries_;
};

}  // namespace torus::health
