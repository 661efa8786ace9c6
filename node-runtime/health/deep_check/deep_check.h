// The deep health check: a self test of the node's idle devices, in the spirit of SageMaker
// HyperPod's deep health checks, run by the agent periodically and on demand and by
// `neuron-node-agent check`. Each part says what it measures, and a part nothing on this node
// could measure is reported as not checked (notChecked), never as passed:
//
//   memory        each idle device: pattern test over a window of its memory through its PCI BAR
//                 (device_memory.h)
//   links         each NeuronLink the instance type has between two idle devices, as the driver
//                 reports it: both ends list each other (connected_devices), and, where the
//                 driver has link speed files, trained at full speed (link_judgement.h)
//   command       the operator's external check (--deep-check-command, e.g. the Neuron
//                 runtime's collective self-test), the only part that drives the NeuronLinks;
//                 given the idle devices (check_command.h)
//   host AllReduce  one rank per idle device on this host's CPU, over the collectives library, in
//                 NeuronLink ring order: this host's collectives path, not the links
//                 (host_allreduce.h); a failure fails the check but takes no device out of service
//
// Devices in use are skipped and say so: the test writes their memory. The result names every
// failing device or link; verdictByDevice() is what takes devices out of service.
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
#include "node-runtime/health/deep_check/host_allreduce.h"
#include "node-runtime/health/deep_check/link_judgement.h"

namespace torus::health {

struct DeepCheckOptions {
  std::uint64_t memoryBytes = 4 << 20;  // memory window per device
  HostAllReduceOptions hostAllReduce;
  std::string command;  // the external check; "" = none configured
  std::chrono::milliseconds commandTimeout{300'000};
  // Opens a device node as the command would (read-write) and closes it: 0, or the errno. The
  // command runs in the agent's container, which the runtime's device rules do not give the
  // devices (EPERM); it then is not run and the part is "not checked". Replaceable for tests.
  std::function<int(const std::filesystem::path&)> openDevice;
};

// kSkipped: in use, not touched. kNotChecked: idle, but the test could not run here (a device
// whose memory the agent may not write); never counted as passed.
enum class CheckState { kPassed, kFailed, kSkipped, kNotChecked };
std::string_view checkStateName(CheckState state);

struct DeviceCheck {
  int device = 0;
  CheckState state = CheckState::kPassed;
  std::string detail;  // the problem, or why it was skipped or not checked
  std::uint64_t memoryBytes = 0;
  double memorySeconds = 0;
};

struct LinkCheck {
  int a = 0;
  int b = 0;
  CheckState state = CheckState::kPassed;
  std::string detail;
  bool listed = true;              // both ends list each other in connected_devices
  std::optional<LinkSpeed> speed;  // unset when the driver reports no link speed
};

struct CommandCheck {
  std::string command;
  CheckState state = CheckState::kPassed;
  std::string detail;  // why it failed
  int exitCode = -1;
  double seconds = 0;
  std::string output;        // its last lines
  std::vector<int> devices;  // what it was given
};

// A part of the check nothing measured on this node, and why.
struct NotChecked {
  std::string part;  // "device_memory", "link_speed", "neuronlink_traffic", "host_allreduce"
  std::string why;
};

struct DeepCheckResult {
  std::string startedAt;  // RFC 3339
  double seconds = 0;
  std::vector<DeviceCheck> devices;
  std::vector<LinkCheck> links;
  std::vector<int> ring;  // idle devices in NeuronLink ring order
  bool ringAlongLinks = false;
  std::optional<double> hostAllReduceSeconds;
  std::uint64_t hostAllReduceBytes = 0;
  std::string hostAllReduceProblem;
  std::optional<CommandCheck> command;  // unset when not run
  std::vector<NotChecked> notChecked;

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

}  // namespace torus::health
