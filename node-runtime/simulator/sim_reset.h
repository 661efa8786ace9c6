// The Neuron driver's reset, as the simulated driver (neuron-sim-driver) answers it through
// neuronN/reset: a write of 1 starts a reset that takes time, during which the file reads 0, and
// which ends READY (1) or INVALID (2); a write while some process holds /dev/neuronN is ignored,
// silently, as the driver does. What a device's next reset does is read from the tree at each
// write, so tests change it on a running node (reset-slow, reset-fail: sim_fault.h).
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

struct SimulatedResetOptions {
  std::filesystem::path treeRoot;                  // where the behaviour files are
  std::chrono::milliseconds defaultDuration{300};  // a reset without a behaviour file
  std::string procRoot = "/proc";                  // whose processes may hold a device
  std::filesystem::path devRoot = "/dev";          // where they open neuronN
  std::function<std::chrono::steady_clock::time_point()> now = std::chrono::steady_clock::now;
};

class SimulatedResets {
 public:
  explicit SimulatedResets(SimulatedResetOptions options);

  // A write of `text` to neuronN/reset. "1" starts a reset (a write during one starts it again)
  // unless the device is open; anything else is refused as the driver refuses it (EINVAL).
  Result<void> write(int device, std::string_view text);
  // What neuronN/reset reads now: "0\n" while resetting, else "1\n" or "2\n".
  std::string read(int device);

  // For the log: resets started, ignored because the device was held, and ended INVALID.
  struct Counts {
    int started = 0;
    int ignoredWhileHeld = 0;
    int failed = 0;
  };
  Counts counts() const;

 private:
  struct DeviceState {
    int settled = 1;  // READY until a reset says otherwise
    bool resetting = false;
    int outcome = 1;
    std::chrono::steady_clock::time_point readyAt;
  };

  void settle(DeviceState& state);

  SimulatedResetOptions options_;
  mutable std::mutex mutex_;
  std::map<int, DeviceState> devices_;
  Counts counts_;
};

}  // namespace torus::simulator
