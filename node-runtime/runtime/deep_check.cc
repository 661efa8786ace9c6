#include "node-runtime/runtime/deep_check.h"

#include <algorithm>
#include <set>
#include <thread>

#include "common/base/utc_time.h"
#include "common/topology/neuronlink_graph.h"
#include "node-runtime/runtime/device_memory.h"
#include "node-runtime/runtime/ring_order.h"

namespace torus::runtime {
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
  }
  return "unknown";
}

int DeepCheckResult::failures() const {
  int failed = allReduceProblem.empty() ? 0 : 1;
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
  // A broken ring with no failed link or device to blame: every device on it is suspect.
  if (!allReduceProblem.empty()) {
    for (const int device : ring)
      reasons[device].push_back(allReduceProblem);
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

DeepCheckResult runDeepCheck(const topology::Node& node, const discovery::DiscoveryRoots& roots,
                             const BusyDevices& busyNow, const DeepCheckOptions& options) {
  const auto started = Clock::now();
  DeepCheckResult result;
  result.startedAt = utcNowRfc3339();
  result.transferBytes = options.links.transferBytes;
  result.allReduceBytes = options.links.allReduceBytes;

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

  // Memory: every idle device at once, one thread each, as the ranks will run.
  {
    std::vector<std::jthread> testers;
    for (DeviceCheck& check : result.devices) {
      if (check.state == CheckState::kSkipped) continue;
      testers.emplace_back([&roots, &check, &options] {
        const MemoryTestResult memory = testDeviceMemory(roots, check.device, options.memoryBytes);
        check.state = memory.passed ? CheckState::kPassed : CheckState::kFailed;
        check.detail =
            memory.passed ? "" : "neuron" + std::to_string(check.device) + " " + memory.problem;
        check.memoryBytes = memory.windowBytes;
        check.memorySeconds = memory.seconds;
      });
    }
  }

  // Allocated while their memory was tested: their verdict stands, the later phases leave them.
  const topology::DeviceSet busyForLinks = busyNow();
  for (DeviceCheck& check : result.devices) {
    if (check.state != CheckState::kSkipped && busyForLinks.contains(check.device) &&
        check.detail.empty()) {
      check.detail = "allocated during the check: memory tested, links and AllReduce left alone";
    }
  }
  std::erase_if(idle, [&](int device) { return busyForLinks.contains(device); });

  const topology::NeuronLinkGraph reported = topology::NeuronLinkGraph::fromNode(node);
  std::vector<LinkObservation> observations;
  std::vector<std::pair<int, int>> toTime;
  for (const auto& [a, b] : expectedLinks(node, reported)) {
    LinkCheck check;
    check.a = a;
    check.b = b;
    if (busyForLinks.contains(a) || busyForLinks.contains(b)) {
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
      } else {
        seen.speed = slowerEnd(*speedA, *speedB);
      }
      toTime.emplace_back(a, b);
    }
    check.speed = seen.speed;
    observations.push_back(std::move(seen));
    result.links.push_back(std::move(check));
  }

  const NeuronLinkRing ring =
      neuronLinkRing(idle, [&](int a, int b) { return reported.linked(a, b); });
  result.ring = ring.order;
  result.ringAlongLinks = ring.alongLinks && (ring.closed || ring.order.size() <= 2);
  const LinkExercise exercise = exerciseLinks(ring.order, toTime, options.links);
  result.allReduceSeconds = exercise.allReduceSeconds;
  result.allReduceProblem = exercise.problem;

  for (LinkObservation& seen : observations) {
    for (const LinkTiming& timing : exercise.links) {
      if (timing.a != seen.a || timing.b != seen.b) continue;
      seen.seconds = timing.seconds;
      if (seen.error.empty()) seen.error = timing.error;
    }
  }
  std::vector<std::string> problems = judgeLinks(observations, options.slowLink);
  // A link whose end was allocated while it was timed is not judged: the container's traffic, not
  // the link, may have made it slow.
  const topology::DeviceSet busyAfterLinks = busyNow();
  std::vector<bool> withdrawn(observations.size(), false);
  for (std::size_t i = 0; i < observations.size(); ++i) {
    withdrawn[i] =
        busyAfterLinks.contains(observations[i].a) || busyAfterLinks.contains(observations[i].b);
  }
  // A descheduled rank thread can make a healthy link look slow once; a degraded link is slow
  // every time. So links slow by timing alone are timed again, with more attempts, and only
  // those still slow (fastest of both runs) fail.
  std::vector<std::pair<int, int>> suspects;
  for (std::size_t i = 0; i < observations.size(); ++i) {
    if (!withdrawn[i] && !problems[i].empty() && observations[i].up &&
        observations[i].error.empty() &&
        !(observations[i].speed && observations[i].speed->current < observations[i].speed->max)) {
      suspects.emplace_back(observations[i].a, observations[i].b);
    }
  }
  if (!suspects.empty() && exercise.problem.empty()) {
    LinkExerciseOptions again = options.links;
    again.allReduce = false;
    again.attempts = 4 * options.links.attempts;
    for (const LinkTiming& timing : exerciseLinks(ring.order, suspects, again).links) {
      for (LinkObservation& seen : observations) {
        if (seen.a == timing.a && seen.b == timing.b && timing.seconds && seen.seconds) {
          seen.seconds = std::min(*seen.seconds, *timing.seconds);
        }
      }
    }
    problems = judgeLinks(observations, options.slowLink);
  }
  std::size_t observed = 0;
  for (LinkCheck& check : result.links) {
    if (check.state == CheckState::kSkipped) continue;
    const LinkObservation& seen = observations[observed];
    check.seconds = seen.seconds;
    if (withdrawn[observed]) {
      check.state = CheckState::kSkipped;
      check.detail = "an end was allocated during the check; not judged";
    } else {
      check.detail = problems[observed];
      check.state = check.detail.empty() ? CheckState::kPassed : CheckState::kFailed;
    }
    ++observed;
  }
  // A link failure already explains a failed ring; keep the ring's own problem only when nothing
  // else does.
  const bool linkFailed = std::any_of(result.links.begin(), result.links.end(),
                                      [](const auto& l) { return l.state == CheckState::kFailed; });
  if (linkFailed && !exercise.links.empty() &&
      std::any_of(exercise.links.begin(), exercise.links.end(),
                  [](const LinkTiming& t) { return !t.error.empty(); })) {
    result.allReduceProblem.clear();
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return result;
}

}  // namespace torus::runtime
