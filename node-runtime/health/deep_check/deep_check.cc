#include "node-runtime/health/deep_check/deep_check.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "common/base/strings.h"
#include "common/base/utc_time.h"
#include "common/contracts/neuron_names.h"
#include "common/topology/neuronlink_graph.h"
#include "node-runtime/health/deep_check/check_command.h"
#include "node-runtime/health/deep_check/device_memory.h"
#include "node-runtime/health/deep_check/ring_order.h"

namespace torus::health {
namespace {

using Clock = std::chrono::steady_clock;

// The links the instance type is built with (what a healthy node reports), each once, a < b.
// Without a catalog entry for this node, the links it reports are all we can check.
std::vector<std::pair<int, int>> expectedLinks(const topology::Node& node,
                                               const topology::NeuronLinkGraph& reported) {
  std::set<std::pair<int, int>> links;
  const bool fromCatalog =
      node.catalog != nullptr && node.catalog->deviceCount == node.deviceCount();
  for (int a = 0; a < node.deviceCount(); ++a) {
    const std::vector<int> peers =
        fromCatalog ? topology::driverNeighbours(*node.catalog, a) : reported.neighbours(a);
    for (const int b : peers) {
      if (b >= 0 && b < node.deviceCount() && b != a) links.emplace(std::min(a, b), std::max(a, b));
    }
  }
  return {links.begin(), links.end()};
}

std::optional<LinkSpeed> slowerEnd(std::optional<LinkSpeed> x, std::optional<LinkSpeed> y) {
  if (!x) return y;
  if (!y) return x;
  return x->current / x->max <= y->current / y->max ? x : y;
}

}  // namespace

std::string_view checkStateName(CheckState state) {
  switch (state) {
    case CheckState::kPassed:
      return "passed";
    case CheckState::kFailed:
      return "failed";
    case CheckState::kSkipped:
      return "skipped";
    case CheckState::kNotChecked:
      return "not checked";
  }
  return "unknown";
}

int DeepCheckResult::failures() const {
  int failed = hostAllReduceProblem.empty() ? 0 : 1;
  if (command && command->state == CheckState::kFailed) ++failed;
  for (const DeviceCheck& device : devices)
    failed += device.state == CheckState::kFailed ? 1 : 0;
  for (const LinkCheck& link : links)
    failed += link.state == CheckState::kFailed ? 1 : 0;
  return failed;
}

bool DeepCheckResult::passed() const {
  return failures() == 0;
}

std::map<int, std::string> DeepCheckResult::verdictByDevice() const {
  std::map<int, std::vector<std::string>> reasons;
  for (const DeviceCheck& device : devices) {
    if (device.state == CheckState::kSkipped) continue;
    auto& mine = reasons[device.device];
    if (device.state == CheckState::kFailed) mine.push_back(device.detail);
  }
  // A failed link takes both of its ends out: a ring placed across it would fail or crawl.
  for (const LinkCheck& link : links) {
    if (link.state != CheckState::kFailed) continue;
    reasons[link.a].push_back(link.detail);
    reasons[link.b].push_back(link.detail);
  }
  // The external check drove the links between the devices it was given: with nothing more
  // specific to blame, each of them is suspect. (The host AllReduce blames no device: its traffic
  // never left the host.)
  if (command && command->state == CheckState::kFailed) {
    for (const int device : command->devices)
      reasons[device].push_back(command->detail);
  }
  std::map<int, std::string> verdict;
  for (auto& [device, list] : reasons) {
    std::string text;
    for (const std::string& reason : list) {
      if (!text.empty()) text += "; ";
      text += reason;
    }
    verdict[device] = text.empty() ? "" : "deep check: " + text;
  }
  return verdict;
}

namespace {

// Memory: every idle device at once, one thread each. A device whose BAR the agent may not write
// (the chart mounts /sys read-only) is not judged by memory: the check says so once.
void testMemory(const topology::Node& node, const discovery::DiscoveryRoots& roots,
                const DeepCheckOptions& options, DeepCheckResult& result) {
  std::vector<std::string> untested(result.devices.size());
  {
    std::vector<std::jthread> testers;
    for (std::size_t i = 0; i < result.devices.size(); ++i) {
      DeviceCheck& check = result.devices[i];
      if (check.state == CheckState::kSkipped) continue;
      const topology::Device& device = node.devices[i];
      testers.emplace_back([&roots, &device, &check, &options, &why = untested[i]] {
        const MemoryTestResult memory = testDeviceMemory(roots, device, options.memoryBytes);
        if (!memory.tested) {
          why = memory.problem;
          check.state = CheckState::kNotChecked;
          check.detail = memory.problem;
          return;
        }
        check.state = memory.passed ? CheckState::kPassed : CheckState::kFailed;
        check.detail =
            memory.passed ? "" : "neuron" + std::to_string(check.device) + " " + memory.problem;
        check.memoryBytes = memory.windowBytes;
        check.memorySeconds = memory.seconds;
      });
    }
  }
  std::vector<std::string> names;
  std::string firstReason;
  for (std::size_t i = 0; i < untested.size(); ++i) {
    if (untested[i].empty()) continue;
    names.push_back("neuron" + std::to_string(result.devices[i].device));
    if (firstReason.empty()) firstReason = untested[i];
  }
  if (!names.empty()) {
    result.notChecked.push_back({"device_memory", joinStrings(names, ", ") + ": " + firstReason});
  }
}

// Links, as the driver reports them: listed by both ends, and trained at full speed where the
// driver has speed files. Links with an end in `busy` are skipped.
void judgeReportedLinks(const topology::Node& node, const discovery::DiscoveryRoots& roots,
                        const topology::NeuronLinkGraph& reported, const topology::DeviceSet& busy,
                        DeepCheckResult& result) {
  std::vector<LinkObservation> observations;
  bool anySpeedReported = false;
  for (const auto& [a, b] : expectedLinks(node, reported)) {
    LinkCheck check;
    check.a = a;
    check.b = b;
    if (busy.contains(a) || busy.contains(b)) {
      check.state = CheckState::kSkipped;
      check.detail = "an end is in use; not touched";
      result.links.push_back(std::move(check));
      continue;
    }
    LinkObservation seen;
    seen.a = a;
    seen.b = b;
    seen.up = reported.linked(a, b);
    if (seen.up) {
      auto speedA = readLinkSpeed(roots, a, b);
      auto speedB = readLinkSpeed(roots, b, a);
      if (!speedA || !speedB) {
        seen.error =
            "cannot read its speed: " + (speedA ? speedB.error().message : speedA.error().message);
      } else if (*speedA || *speedB) {
        seen.speed = slowerEnd(*speedA, *speedB);
        anySpeedReported = true;
      }
    }
    check.listed = seen.up;
    check.speed = seen.speed;
    observations.push_back(std::move(seen));
    result.links.push_back(std::move(check));
  }
  const std::vector<std::string> problems = judgeLinks(observations);
  std::size_t observed = 0;
  for (LinkCheck& check : result.links) {
    if (check.state == CheckState::kSkipped) continue;
    check.detail = problems[observed++];
    check.state = check.detail.empty() ? CheckState::kPassed : CheckState::kFailed;
  }
  if (!observations.empty() && !anySpeedReported) {
    result.notChecked.push_back(
        {"link_speed", "the driver reports no trained speed for any NeuronLink of this node"});
  }
}

// The external check, the one part that drives the NeuronLinks, on the devices of `given`.
CommandCheck runExternalCheck(const topology::Node& node, const std::vector<int>& given,
                              const DeepCheckOptions& options) {
  CommandCheck command;
  command.command = options.command;
  command.devices = given;
  std::string devices;
  std::string ringText;
  topology::CoreSet cores;
  for (const int device : given) {
    // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict) on "literal" + std::string&&.
    if (!devices.empty()) devices += ',';
    devices += std::to_string(device);
    if (!ringText.empty()) ringText += ' ';
    ringText += std::to_string(device);
    cores |= node.coresOfDevice(device);
  }
  const CommandOutcome outcome = runCheckCommand(
      options.command,
      {{"TORUS_DEEP_CHECK_DEVICES", devices},
       {"TORUS_DEEP_CHECK_RING", ringText},
       {std::string(contracts::kVisibleCoresEnv), topology::visibleCoresText(cores)}},
      options.commandTimeout);
  command.state = outcome.passed ? CheckState::kPassed : CheckState::kFailed;
  command.detail = outcome.problem;
  command.exitCode = outcome.exitCode;
  command.seconds = outcome.seconds;
  command.output = outcome.output;
  return command;
}

int openDeviceNode(const std::filesystem::path& node) {
  const int fd = ::open(node.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

// Why a command run in this container could not use `given`, or "" when it could. ENXIO and
// ENODEV mean the device rules let the open through to no driver (a simulated node): allowed.
std::string deviceAccessProblem(const discovery::DiscoveryRoots& roots,
                                const std::vector<int>& given, const DeepCheckOptions& options) {
  const auto open = options.openDevice ? options.openDevice : openDeviceNode;
  for (const int device : given) {
    const std::filesystem::path node = roots.deviceNode(device);
    const int error = open(node);
    if (error == EPERM || error == EACCES) {
      return "the agent's container may not open " + node.string() + " (" + std::strerror(error) +
             "): the runtime's device rules give devices only to the containers they are "
             "allocated to, so --deep-check-command would run without them";
    }
  }
  return "";
}

// The devices of the ring not in use now, in ring order.
std::vector<int> stillIdle(const std::vector<int>& ring, const topology::DeviceSet& busy) {
  std::vector<int> idle;
  for (const int device : ring) {
    if (!busy.contains(device)) idle.push_back(device);
  }
  return idle;
}

}  // namespace

DeepCheckResult runDeepCheck(const topology::Node& node, const discovery::DiscoveryRoots& roots,
                             const BusyDevices& busyNow, const DeepCheckOptions& options) {
  const auto started = Clock::now();
  DeepCheckResult result;
  result.startedAt = utcNowRfc3339();
  result.hostAllReduceBytes = options.hostAllReduce.bytes;

  const topology::DeviceSet busy = busyNow();
  std::vector<int> idle;
  for (const topology::Device& device : node.devices) {
    DeviceCheck check;
    check.device = device.index;
    if (busy.contains(device.index)) {
      check.state = CheckState::kSkipped;
      check.detail = "in use by a container or process; not touched";
    } else {
      idle.push_back(device.index);
    }
    result.devices.push_back(std::move(check));
  }
  testMemory(node, roots, options, result);

  // Allocated while their memory was tested: their verdict stands, the later parts leave them.
  const topology::DeviceSet busyForLinks = busyNow();
  for (DeviceCheck& check : result.devices) {
    if (check.state != CheckState::kSkipped && busyForLinks.contains(check.device) &&
        check.detail.empty()) {
      check.detail = "allocated during the check: memory tested, the later parts left it alone";
    }
  }
  std::erase_if(idle, [&](int device) { return busyForLinks.contains(device); });

  const topology::NeuronLinkGraph reported = topology::NeuronLinkGraph::fromNode(node);
  judgeReportedLinks(node, roots, reported, busyForLinks, result);

  const NeuronLinkRing ring =
      neuronLinkRing(idle, [&](int a, int b) { return reported.linked(a, b); });
  result.ring = ring.order;
  result.ringAlongLinks = ring.alongLinks && (ring.closed || ring.order.size() <= 2);

  const std::vector<int> given = stillIdle(ring.order, busyNow());
  if (options.command.empty()) {
    result.notChecked.push_back(
        {"neuronlink_traffic",
         "no --deep-check-command is configured (e.g. the Neuron runtime's nccom-test)"});
  } else if (given.empty()) {
    result.notChecked.push_back({"neuronlink_traffic", "every device is in use"});
  } else if (const std::string denied = deviceAccessProblem(roots, given, options);
             !denied.empty()) {
    result.notChecked.push_back({"neuronlink_traffic", denied});
  } else {
    result.command = runExternalCheck(node, given, options);
  }

  const std::vector<int> hostRing = stillIdle(ring.order, busyNow());
  if (hostRing.size() < 2) {
    result.notChecked.push_back({"host_allreduce", "fewer than two idle devices"});
  } else {
    const HostAllReduce host = runHostAllReduce(hostRing, options.hostAllReduce);
    result.hostAllReduceSeconds = host.seconds;
    result.hostAllReduceProblem = host.problem;
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return result;
}

}  // namespace torus::health
