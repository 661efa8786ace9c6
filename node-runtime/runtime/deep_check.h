// The deep health check: a self test of the node's idle devices and the NeuronLinks between them,
// in the spirit of SageMaker HyperPod's deep health checks, run by the agent periodically and on
// demand and by `neuron-node-agent check`.
//
//   memory     each idle device: pattern test over a window of its memory (device_memory.h)
//   links      each NeuronLink the instance type has between two idle devices: up (both ends list
//              each other), trained at full speed, and a timed transfer not far slower than the
//              node's other links (link_judgement.h)
//   AllReduce  a ring over the idle devices in NeuronLink order, one rank per device, over the
//              collectives library; every rank checks the sums (link_exercise.h)
//
// Devices in use are skipped and say so: the test writes their memory. The result names every
// failing device or link; failuresByDevice() is what takes devices out of service.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/topology/node.h"
#include "node-runtime/discovery/discovery_roots.h"
#include "node-runtime/runtime/link_exercise.h"
#include "node-runtime/runtime/link_judgement.h"

namespace torus::runtime {

struct DeepCheckOptions {
  std::uint64_t memoryBytes = 4 << 20;  // memory window per device
  LinkExerciseOptions links;
  SlowLinkPolicy slowLink;
};

enum class CheckState { kPassed, kFailed, kSkipped };
std::string_view checkStateName(CheckState state);

struct DeviceCheck {
  int device = 0;
  CheckState state = CheckState::kPassed;
  std::string detail;  // the problem, or why it was skipped
  std::uint64_t memoryBytes = 0;
  double memorySeconds = 0;
};

struct LinkCheck {
  int a = 0;
  int b = 0;
  CheckState state = CheckState::kPassed;
  std::string detail;
  std::optional<double> seconds;  // one transfer of options.links.transferBytes
  std::optional<LinkSpeed> speed;
};

struct DeepCheckResult {
  std::string startedAt;  // RFC 3339
  double seconds = 0;
  std::vector<DeviceCheck> devices;
  std::vector<LinkCheck> links;
  std::vector<int> ring;  // devices in AllReduce ring order
  bool ringAlongLinks = false;
  std::optional<double> allReduceSeconds;
  std::uint64_t allReduceBytes = 0;
  std::uint64_t transferBytes = 0;
  std::string allReduceProblem;

  bool passed() const;
  int failures() const;
  // Tested devices -> the reason each failed ("" when it passed); skipped devices are absent.
  std::map<int, std::string> verdictByDevice() const;
};

// `busyNow`: the devices in use now (allocated to a container or held open), which are not
// touched. Asked before each phase: a device allocated during a run (the link and AllReduce
// phases take seconds) is left alone from the next phase on, and its links are not judged.
using BusyDevices = std::function<topology::DeviceSet()>;
DeepCheckResult runDeepCheck(const topology::Node& node, const discovery::DiscoveryRoots& roots,
                             const BusyDevices& busyNow, const DeepCheckOptions& options);

}  // namespace torus::runtime
