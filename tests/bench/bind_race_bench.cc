// Binds refused because the next pod was placed before the previous pod's bind arrived.
//
// kube-scheduler starts the next pod's scheduling cycle (filter, prioritize) while the previous
// pod's bind is still on its way to the extender. Without holds the extender scores the next pod
// on the same free cores, best fit sends it to the node the previous pod is about to fill, and
// one of the two binds is refused: a wasted cycle, a status write and a backoff for that pod.
// This replays kube-scheduler's pipeline against the extender's own verbs and scheduling cycles
// (the functions the HTTP routes call), with each bind arriving LAG cycles after its pod's
// prioritize, on the cluster and pods of tests/bench/scheduling_throughput.sh (1,000 trn2 +
// 200 inf2, 2,000 pods of 1, 2, 4, 8, 16 cores and 1, 4 devices), and counts refused binds per
// 1,000 binds with prioritize's holds and, in the same run, without them (the baseline: the
// extender's prioritize before holds). kube-scheduler breaks ties between equal final scores at
// random; so does the replay (with holds the held node alone has the top score).
//
//   build/tests/bind_race_bench [--pods=N] [--seed=N]
#include <cstdio>
#include <cstring>
#include <deque>
#include <random>
#include <string>

#include "common/base/log.h"
#include "common/topology/allowed_shapes.h"
#include "scheduler-extender/state/scheduling_cycles.h"
#include "scheduler-extender/state/simulated_cluster.h"
#include "scheduler-extender/verbs/verbs.h"

namespace {

using namespace torus;
using extender::PodDemand;
using topology::AllocationUnit;
using Clock = extender::SchedulingCycles::Clock;

// kube-scheduler's cycle with the extender took 37 ms per pod on the local control plane.
constexpr auto kCycle = std::chrono::milliseconds(37);

PodDemand makePod(int id) {
  static constexpr struct {
    AllocationUnit unit;
    int count;
  } kSizes[] = {{AllocationUnit::kCore, 1},  {AllocationUnit::kCore, 2},
                {AllocationUnit::kCore, 4},  {AllocationUnit::kCore, 8},
                {AllocationUnit::kCore, 16}, {AllocationUnit::kDevice, 1},
                {AllocationUnit::kDevice, 4}};
  const auto& size = kSizes[id % std::size(kSizes)];
  PodDemand pod;
  pod.name = "pod-" + std::to_string(id);
  pod.namespace_ = "bench";
  pod.uid = "uid-" + std::to_string(id);
  pod.unit = size.unit;
  pod.count = size.count;
  pod.resourceName =
      size.unit == AllocationUnit::kCore ? "aws.amazon.com/neuroncore" : "aws.amazon.com/neuron";
  return pod;
}

struct Outcome {
  int bound = 0;
  int refused = 0;
  int cycles = 0;
  int invalid = 0;  // placements not on an allowed shape (must stay 0)
};

Outcome replay(int pods, int lag, bool holds, unsigned seed) {
  extender::ClusterState state;
  (void)extender::addSimulatedNodes(state, {{"trn2.48xlarge", 1000}, {"inf2.48xlarge", 200}});
  const std::vector<std::string> nodes = state.nodeNames();
  extender::SchedulingCycles cycles;
  std::mt19937 random(seed);
  std::deque<int> queue;
  for (int id = 0; id < pods; ++id)
    queue.push_back(id);
  struct InFlight {
    PodDemand pod;
    std::string node;
    int arrivesAtCycle;
  };
  std::deque<InFlight> binds;
  Outcome outcome;
  Clock::time_point now{};
  const auto deliverBinds = [&](int upToCycle) {
    while (!binds.empty() && binds.front().arrivesAtCycle <= upToCycle) {
      InFlight bind = std::move(binds.front());
      binds.pop_front();
      const bool filtered =
          cycles.bindRefusal(bind.pod.uid, bind.pod.key(), bind.node, now).empty();
      // With holds, the bind chooses around other pods' holds, as the bind route does.
      const topology::CoreSet avoid =
          holds ? cycles.heldOnNodeForOthers(bind.pod.uid, bind.node, now) : topology::CoreSet{};
      auto allocation =
          filtered ? extender::bindPod(state, bind.pod, bind.node, nullptr, std::nullopt, avoid)
                   : Result<extender::Allocation>(makeError(ErrorCode::kAborted, ""));
      cycles.finished(bind.pod.uid);
      if (allocation) {
        ++outcome.bound;
        const auto model = state.node(bind.node)->model;
        const bool allowed =
            bind.pod.unit == AllocationUnit::kDevice
                ? topology::isAllowedDeviceSet(topology::shapeRulesOf(model), allocation->ids)
                : allocation->cores.isContiguous();
        outcome.invalid += allowed ? 0 : 1;
      } else {
        ++outcome.refused;
        queue.push_back(std::stoi(bind.pod.uid.substr(4)));  // scheduled again, later
      }
    }
  };
  while (!queue.empty() || !binds.empty()) {
    deliverBinds(outcome.cycles);
    if (queue.empty()) {
      ++outcome.cycles;
      continue;
    }
    const PodDemand pod = makePod(queue.front());
    queue.pop_front();
    ++outcome.cycles;
    now += kCycle;
    const auto passed = extender::filter(state, pod, nodes).nodeNames;
    if (passed.empty()) continue;  // the cluster is full for it: not a race
    cycles.filtered(pod.uid, passed, now);
    // With holds, as the prioritize route does; without, as prioritize did before holds.
    extender::HeldCores held;
    extender::ExpectedPlacement best;
    if (holds) held = cycles.heldForOthers(pod.uid, now);
    const auto scores = holds ? extender::prioritize(state, pod, passed, &held, &best)
                              : extender::prioritize(state, pod, passed);
    if (holds && !best.node.empty()) cycles.hold(pod.uid, best.node, best.cores, now);
    int top = -1;
    std::vector<std::string> chosen;
    for (const auto& host : scores) {
      if (host.score > top) {
        top = host.score;
        chosen.clear();
      }
      if (host.score == top) chosen.push_back(host.host);
    }
    const std::string& node = chosen[random() % chosen.size()];
    binds.push_back({pod, node, outcome.cycles + lag});
  }
  return outcome;
}

}  // namespace

int main(int argc, char** argv) {
  int pods = 2000;
  unsigned seed = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--pods=", 7) == 0) {
      pods = std::atoi(argv[i] + 7);
    } else if (std::strncmp(argv[i], "--seed=", 7) == 0) {
      seed = static_cast<unsigned>(std::atoi(argv[i] + 7));
    } else {
      std::fprintf(
          stderr,
          "usage: bind_race_bench [--pods=N] [--seed=N]\n"
          "Refused binds per 1,000 when each bind arrives LAG scheduling cycles after its\n"
          "pod's prioritize, with the extender's holds and without (same run).\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  log::configure({log::Level::kError, 0, log::Format::kText});
  std::printf("%d pods on 1,000 trn2.48xlarge + 200 inf2.48xlarge (seed %u)\n\n", pods, seed);
  std::printf("%-4s | %-27s | %-27s | %s\n", "lag", "refused / 1,000 binds: holds",
              "without holds (baseline)", "cycles per pod: holds / without");
  std::printf("-----|-----------------------------|-----------------------------|---------\n");
  int invalid = 0;
  for (const int lag : {1, 2, 4, 8}) {
    const Outcome with = replay(pods, lag, true, seed);
    const Outcome without = replay(pods, lag, false, seed);
    invalid += with.invalid + without.invalid;
    const auto perThousand = [](const Outcome& o) {
      return 1000.0 * o.refused / std::max(1, o.bound + o.refused);
    };
    std::printf("%-4d | %27.1f | %27.1f | %.3f / %.3f\n", lag, perThousand(with),
                perThousand(without), static_cast<double>(with.bound + with.refused) / pods,
                static_cast<double>(without.bound + without.refused) / pods);
  }
  std::printf("\nplacements off an allowed shape: %d\n", invalid);
  return invalid == 0 ? 0 : 1;
}
