// What the simulated driver (neuron-sim-driver) does with the files of neuronN it serves, as the
// Neuron driver (aws-neuron-driver 2.24.7.0) does: which are writable, with what mode, and what a
// write does. Chiefly the reset: a write of anything to neuronN/reset starts one, reading 0 at
// once and 1 (READY) or 2 (INVALID) when it ends; it is ignored while a process holds
// /dev/neuronN other than write-only, and dropped while a reset is still pending. The reset counts
// itself in each core's reset_req_count (and reset_fail_count when it fails), and one that ends
// READY repairs an HBM error pending repair. A write to a metric's total, present or peak clears
// it; other metric files take a write and ignore it. What a device's next reset does is read from
// the tree at each write, so tests change it on a running node (reset-slow, reset-fail:
// sim_fault.h). Not here: serving the files (sim_driver/main.cc), writing the tree (sim_tree.h).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/base/result.h"

namespace torus::simulator {

// <tree>/simulated-driver/neuronN/reset: "fail" or "slow MS" (absent: the default reset).
std::filesystem::path resetBehaviourFile(const std::filesystem::path& treeRoot, int device);

struct ResetBehaviour {
  std::chrono::milliseconds duration{0};
  bool fails = false;
};

// The behaviour file's text: "fail", "slow MS", or "fail MS" (both).
Result<ResetBehaviour> parseResetBehaviour(std::string_view text,
                                           std::chrono::milliseconds defaultDuration);

// What the driver's store method for a file does (none: the file cannot be opened for writing).
enum class AttributeStore {
  kNone,          // no store: core_count, connected_devices, and the kernel's dev and uevent
  kReset,         // neuronN/reset: starts a reset (SimulatedResets::write)
  kClearCounter,  // a metric's total, present or peak: any write sets it to 0
  kNotifyDelay,   // neuronN/info/notify_delay: "0" or "-1" sets the driver-wide notify flag
  kIgnored,       // other metric files (ECC counters, info): the write succeeds, nothing changes
};

struct DriverAttribute {
  int device = -1;  // N of the neuronN the file is in; -1 outside every device
  unsigned mode = 0444;
  AttributeStore store = AttributeStore::kNone;
};

// The regular file at `path` under the neuron_device directory ("/neuron3/core_count", as FUSE
// names it) as the driver registers it.
DriverAttribute driverAttribute(std::string_view path);

struct SimulatedResetOptions {
  std::filesystem::path treeRoot;                  // the behaviour files and the served tree
  std::chrono::milliseconds defaultDuration{300};  // a reset without a behaviour file
  std::string procRoot = "/proc";                  // whose processes may hold a device
  std::filesystem::path devRoot = "/dev";          // where they open neuronN
  std::function<std::chrono::steady_clock::time_point()> now = std::chrono::steady_clock::now;
};

// What became of a write to neuronN/reset. The driver answers every one with success.
enum class ResetRequest {
  kStarted,
  kIgnoredWhileHeld,     // a process has the device open (not write-only)
  kDroppedWhilePending,  // a reset of the device has not ended yet
};

class SimulatedResets {
 public:
  explicit SimulatedResets(SimulatedResetOptions options);

  // A write of `text` (whatever it says) to neuronN/reset.
  ResetRequest write(int device, std::string_view text);
  // What neuronN/reset reads now: "0\n" while resetting, else "1\n" or "2\n".
  std::string read(int device);
  // Ends a reset of `device` whose time is up, so the files read next show what it did (the
  // counters it moves change when it is seen to end: at a read of reset or of any file of N).
  void settle(int device);

  // A write of `text` to the metric file `path` (as driverAttribute names it), whose store is
  // kClearCounter, kNotifyDelay or kIgnored: what that store does to the tree.
  void writeMetric(std::string_view path, AttributeStore store, std::string_view text);

  // For the log: resets started, ignored because the device was held, dropped because one was
  // pending, and ended INVALID.
  struct Counts {
    int started = 0;
    int ignoredWhileHeld = 0;
    int droppedWhilePending = 0;
    int failed = 0;
  };
  Counts counts() const;

 private:
  struct DeviceState {
    int settled = 1;  // READY until a reset says otherwise
    bool resetting = false;
    int outcome = 1;
    bool repairPending = false;  // an HBM error awaited repair when this reset was requested
    std::chrono::steady_clock::time_point readyAt;
  };

  void settleLocked(int device, DeviceState& state);
  std::filesystem::path deviceDir(int device) const;
  std::filesystem::path repairableCounter(int device) const;

  SimulatedResetOptions options_;
  mutable std::mutex mutex_;  // also orders every counter file's read-modify-write
  std::map<int, DeviceState> devices_;
  Counts counts_;
};

}  // namespace torus::simulator
