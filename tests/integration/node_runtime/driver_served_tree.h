// Test helper: a simulated tree whose reset files the simulated driver (neuron-sim-driver)
// serves, as on a local-cluster node. Without it a reset is a write into a plain file, which no
// driver takes, and the agent rightly reports such a reset as not done.
//
// The tree is written under DIR/tree and seen under DIR/view, a bind mount of it over which each
// neuronN/reset is bound from the driver's FUSE mount (DIR/driver). The driver itself reads
// DIR/tree, so it never reads through its own mount. Agents and tests read and reset through
// view(); faults may be written into either, they are the same files; a reset shows in the
// tree's reset_req_count counters. Needs root and /dev/fuse (CI has both): usable() says why not.
// Tests run in a mount namespace of their own (tests/CMakeLists.txt), and the mounts are undone
// when the helper goes.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "node-runtime/discovery/discovery_roots.h"
#include "node-runtime/simulator/sim_tree.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {

class DriverServedTree {
 public:
  // Empty when this process may mount FUSE and bind mounts; else the reason it may not.
  static std::optional<std::string> unusableBecause();

  // Writes the tree for `spec` under `dir` and starts the driver with `resetTime` as a reset's
  // length.
  static Result<std::unique_ptr<DriverServedTree>> start(
      const simulator::SimulationSpec& spec, const std::filesystem::path& dir,
      std::chrono::milliseconds resetTime = std::chrono::milliseconds(100));
  DriverServedTree() = default;  // start() makes a working one
  ~DriverServedTree();
  DriverServedTree(const DriverServedTree&) = delete;
  DriverServedTree& operator=(const DriverServedTree&) = delete;

  // What agents read (its simulate dir: --simulate-dir=view() reuses the tree as written).
  const std::filesystem::path& view() const { return view_; }
  discovery::DiscoveryRoots roots() const { return discovery::DiscoveryRoots::under(view_); }
  // The resets the driver has counted for `device` (reset_req_count over its cores).
  std::uint64_t resetsOf(int device) const;
  std::string driverLog() const;

 private:
  void unmount();

  std::filesystem::path tree_;
  std::filesystem::path view_;
  std::filesystem::path mountpoint_;
  std::vector<std::filesystem::path> bound_;
  std::unique_ptr<BackgroundProcess> driver_;
};

}  // namespace torus::testing
