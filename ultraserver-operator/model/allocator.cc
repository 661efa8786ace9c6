#include "ultraserver-operator/model/allocator.h"

#include <algorithm>
#include <optional>
#include <set>

#include "common/base/strings.h"
#include "common/base/utc_time.h"
#include "ultraserver-operator/model/planner.h"

namespace torus::ultraserver {
namespace {

using contracts::kAllocationBound;
using contracts::kAllocationPending;

void setIndices(std::vector<Allocation>& allocations) {
  std::sort(allocations.begin(), allocations.end(), [](const Allocation& a, const Allocation& b) {
    return a.ultraServerIndex != b.ultraServerIndex ? a.ultraServerIndex < b.ultraServerIndex
                                                    : a.ultraServer < b.ultraServer;
  });
}

using AllocationsByWorkload = std::map<std::string, std::vector<Allocation>>;

// Whether a workload's recorded allocations still stand: they match its spec, or a migrating
// workload keeps the ones left. Those that stand are confirmed Bound; a set that does not (the
// spec changed since, or a writer died half-way) is dropped and allocated afresh in pass 2.
bool recordedSetStands(const Workload& workload, std::vector<Allocation>& mine,
                       WorkloadOutcome& outcome) {
  bool matches = static_cast<int>(mine.size()) == workload.serverCount;
  bool anyBound = false;
  for (const Allocation& allocation : mine) {
    matches = matches && static_cast<int>(allocation.nodes.size()) == workload.topologySize;
    anyBound = anyBound || allocation.phase == kAllocationBound;
  }
  const bool migrating = anyBound && workload.strategy == FailureStrategy::kMigrateAffected &&
                         static_cast<int>(mine.size()) < workload.serverCount;
  if (!matches && !migrating) {
    outcome.restartAllPods = anyBound;
    return false;
  }
  for (Allocation& allocation : mine)
    allocation.phase = kAllocationBound;
  return true;
}

// How long the nodes that are not Ready have been so, against the failure grace period.
class GraceClock {
 public:
  GraceClock(const std::string& now, std::chrono::seconds grace)
      : now_(parseUtcRfc3339(now)), grace_(grace) {}

  // How long until the failure strategy acts on `member`, which is not Ready: zero once its
  // grace is over (or cannot be told: a node with no Ready transition, a grace of 0).
  std::chrono::seconds remaining(const MemberNode& member) const {
    if (grace_.count() <= 0 || !now_) return std::chrono::seconds(0);
    const auto since = parseUtcRfc3339(member.notReadySince);
    if (!since) return std::chrono::seconds(0);
    const auto left = grace_ - std::chrono::duration_cast<std::chrono::seconds>(*now_ - *since);
    return std::max(left, std::chrono::seconds(0));
  }

 private:
  std::optional<std::chrono::system_clock::time_point> now_;
  std::chrono::seconds grace_;
};

// Reacts to the nodes of `mine` that have not been Ready for the grace period, as the workload's
// failure strategy says; `mine` is left with what the workload keeps (nothing for RestartAll).
// A node still within its grace is reported and moves nothing; `recheckIn` is lowered to when
// its grace ends.
void applyFailureStrategy(const Planner& planner, const GraceClock& clock, const Workload& workload,
                          std::vector<Allocation>& mine, WorkloadOutcome& outcome,
                          std::optional<std::chrono::seconds>& recheckIn) {
  std::vector<std::string> failed;
  std::vector<std::string> waiting;  // not Ready, within the grace period
  std::vector<Allocation> healthy;
  std::vector<Allocation> affected;
  for (const Allocation& allocation : mine) {
    bool ok = true;
    for (const std::string& node : allocation.nodes) {
      const MemberNode* member = planner.member(node);
      if (member && member->ready) continue;
      const auto left = member ? clock.remaining(*member) : std::chrono::seconds(0);
      if (left.count() > 0) {
        waiting.push_back(node + " (since " + member->notReadySince + ")");
        recheckIn = std::min(recheckIn.value_or(left), left);
        continue;
      }
      failed.push_back(node);
      ok = false;
    }
    (ok ? healthy : affected).push_back(allocation);
  }
  if (failed.empty() && waiting.empty()) return;
  outcome.degraded = true;
  if (failed.empty()) {
    outcome.degradedReason = "NodeNotReady";
    outcome.degradedMessage = "node " + joinStrings(waiting, ", ") +
                              " is not Ready; failureStrategy " +
                              contracts::failureStrategyName(workload.strategy) +
                              " acts when the grace period ends, unless it is back";
    return;
  }
  const std::string nodes = "node " + joinStrings(failed, ", ") + " is not Ready";
  switch (workload.strategy) {
    case FailureStrategy::kRestartAll:
      outcome.restartAllPods = true;
      outcome.degradedReason = "RestartAll";
      outcome.degradedMessage = nodes +
                                ": every allocation released, all pods restart "
                                "once the workload fits whole again";
      mine.clear();
      return;
    case FailureStrategy::kMigrateAffected:
      for (const Allocation& allocation : affected) {
        for (const std::string& node : allocation.nodes)
          outcome.restartPodsOn.push_back(node);
      }
      outcome.degradedReason = "MigrateAffected";
      outcome.degradedMessage = nodes + ": its UltraServer allocation moves, the other " +
                                std::to_string(healthy.size()) + " stay";
      mine = std::move(healthy);
      return;
    case FailureStrategy::kNoOp:
      outcome.degradedReason = "NodeNotReady";
      outcome.degradedMessage = nodes + "; failureStrategy NoOp: nothing is moved";
      return;
  }
}

// A claim of no workload allocated on a node of `mine` in the moment before the reservation's
// taint reached the node's devices (it does not tolerate the taint) holds the chip counters the
// workload's whole-node claim needs, and the driver refuses it at prepare: neither could ever run.
// The reservation gives way (the stranger then prepares; the workload is placed again where it
// fits, or waits naming the claim), with its pods restarted if any ran. Returns whether it did.
// A claim that tolerates the taint forced its way in: it is refused at prepare, and the
// reservation stands. So does one allocated (or made) after the allocation was recorded: it came
// where the node was reserved already, and a running workload is never given away for it.
bool releasedForAStranger(const Planner& planner, const std::vector<Allocation>& mine,
                          WorkloadOutcome& outcome) {
  for (const Allocation& allocation : mine) {
    for (const std::string& node : allocation.nodes) {
      const MemberNode* member = planner.member(node);
      if (!member || !member->busyBeforeTaint) continue;
      // RFC 3339 in UTC to the second on both sides: ordered as text.
      if (!member->busySince.empty() && member->busySince > allocation.allocatedAt) continue;
      outcome.restartAllPods = true;
      outcome.degraded = true;
      outcome.degradedReason = "ReservationTaken";
      outcome.degradedMessage = "node " + node + " was reserved while " + member->busyWith +
                                " of no workload was allocated there; the reservation is "
                                "released and made again where the workload fits";
      return true;
    }
  }
  return false;
}

// What a workload keeps of `mine`, its recorded allocations (confirmed, released, reacting to
// failed nodes), each kept one held in `planner`.
std::vector<Allocation> settleWorkload(Planner& planner, const GraceClock& clock,
                                       const Workload& workload, std::vector<Allocation> mine,
                                       WorkloadOutcome& outcome,
                                       std::optional<std::chrono::seconds>& recheckIn) {
  if (!workload.invalid.empty()) {
    outcome.state = WorkloadState::kFailed;
    outcome.reason = "InvalidSpec";
    outcome.message = workload.invalid;
    outcome.restartAllPods = !mine.empty();
    return {};
  }
  if (workload.deleting) {
    outcome.state = WorkloadState::kDeallocating;
    if (!workload.podsRemain) {
      outcome.reason = "Released";
      outcome.message = "its UltraServers are released";
      return {};
    }
    // Held until its pods are gone, so nobody else's pod can land on a chip still in use.
    for (Allocation& allocation : mine)
      planner.hold(allocation);
    outcome.reason = "PodsTerminating";
    outcome.message = "releasing its UltraServers once its pods are gone";
    outcome.restartAllPods = true;
    return mine;
  }
  if (mine.empty() || !recordedSetStands(workload, mine, outcome)) return {};
  if (releasedForAStranger(planner, mine, outcome)) return {};
  applyFailureStrategy(planner, clock, workload, mine, outcome, recheckIn);
  for (const Allocation& allocation : mine)  // none when RestartAll released them all
    planner.hold(allocation);
  return mine;
}

// Pods first: the allocations a workload gives up (released above) while its pods are still on
// them stay recorded as its own, as a deleting workload's do, until they are gone; Pending, so
// that the devices keep the reserved taint but lose the workload's id, and its controllers' new
// pods wait rather than land on nodes it is leaving. It is not placed anew meanwhile. Returns
// whether it keeps any.
bool keepUntilPodsGone(Planner& planner, const Workload& workload,
                       const std::vector<Allocation>& recorded, std::vector<Allocation>& kept,
                       WorkloadOutcome& outcome) {
  if (workload.deleting || !workload.podsRemain) return false;
  int givenUp = 0;
  for (const Allocation& allocation : recorded) {
    const bool stays = std::any_of(kept.begin(), kept.end(), [&](const Allocation& k) {
      return k.ultraServer == allocation.ultraServer && k.nodes == allocation.nodes;
    });
    if (stays) continue;
    Allocation leaving = allocation;
    leaving.phase = kAllocationPending;
    planner.hold(leaving);
    // Its pods there are evicted again on every pass (one a disruption budget refused).
    if (!outcome.restartAllPods)
      outcome.restartPodsOn.insert(outcome.restartPodsOn.end(), leaving.nodes.begin(),
                                   leaving.nodes.end());
    kept.push_back(std::move(leaving));
    ++givenUp;
  }
  if (givenUp == 0) return false;
  const std::string waiting = "releasing " + std::to_string(givenUp) + " UltraServer allocation" +
                              (givenUp == 1 ? "" : "s") +
                              " once its evicted pods on them are gone (pods terminating)";
  if (outcome.state == WorkloadState::kFailed) {
    outcome.message += "; " + waiting;
    return true;
  }
  int bound = 0;
  for (const Allocation& allocation : kept) {
    if (allocation.phase != kAllocationBound) continue;
    ++bound;
    outcome.allocatedUltraServers.push_back(allocation.ultraServer);
    outcome.allocatedAt = std::max(outcome.allocatedAt, allocation.allocatedAt);
  }
  outcome.state = bound > 0 ? WorkloadState::kPartiallyAllocated : WorkloadState::kPending;
  outcome.reason = "PodsTerminating";
  outcome.message = waiting + "; then it is allocated again where it fits";
  return true;
}

// Pass 1: settle what is recorded, so that pass 2 sees every node that stays held. Returns what
// each workload keeps; `releasing`: the workloads that wait for their pods to leave.
AllocationsByWorkload settleRecorded(Planner& planner, const GraceClock& clock,
                                     const std::vector<const Workload*>& queue,
                                     AllocationsByWorkload& recorded, AllocationPlan& plan,
                                     std::set<std::string>& releasing) {
  AllocationsByWorkload kept;
  for (const Workload* workload : queue) {
    WorkloadOutcome& outcome = plan.outcomes[workload->ref()];
    const std::vector<Allocation>& mine = recorded[workload->ref()];
    std::vector<Allocation> keeps =
        settleWorkload(planner, clock, *workload, mine, outcome, plan.recheckIn);
    if (keepUntilPodsGone(planner, *workload, mine, keeps, outcome))
      releasing.insert(workload->ref());
    if (!keeps.empty()) kept[workload->ref()] = std::move(keeps);
  }
  return kept;
}

// Adds to `mine` the allocations a workload misses, where they fit: all of them for a fresh
// workload or none; what fits for one that keeps some (migrating).
void placeMissing(Planner& planner, const Workload& workload, std::vector<Allocation>& mine) {
  const int missing = workload.serverCount - static_cast<int>(mine.size());
  if (missing <= 0) return;
  std::set<std::string> used;
  std::set<int> indices;
  for (const Allocation& allocation : mine) {
    used.insert(allocation.ultraServer);
    indices.insert(allocation.ultraServerIndex);
  }
  std::vector<Allocation> placed = planner.place(workload, missing, used);
  if (static_cast<int>(placed.size()) == missing || !mine.empty()) {
    int next = 0;
    for (Allocation& allocation : placed) {
      while (indices.count(next))
        ++next;
      allocation.ultraServerIndex = next;
      indices.insert(next);
      planner.hold(allocation);
      mine.push_back(std::move(allocation));
    }
  }
  setIndices(mine);
}

// The state, reason and message of a workload that holds `mine` after pass 2.
void describeHolding(const Planner& planner, const Workload& workload,
                     const std::vector<Allocation>& mine, WorkloadOutcome& outcome) {
  const int have = static_cast<int>(mine.size());
  const bool pendingPhase = std::any_of(
      mine.begin(), mine.end(), [](const Allocation& a) { return a.phase == kAllocationPending; });
  for (const Allocation& allocation : mine) {
    outcome.allocatedUltraServers.push_back(allocation.ultraServer);
    outcome.allocatedAt = std::max(outcome.allocatedAt, allocation.allocatedAt);
  }
  if (have == 0) {
    outcome.state = WorkloadState::kPending;
    outcome.reason = "InsufficientUltraServers";
    outcome.message = planner.waitingFor(workload, workload.serverCount);
  } else if (have < workload.serverCount) {
    outcome.state = WorkloadState::kPartiallyAllocated;
    outcome.reason = "InsufficientUltraServers";
    outcome.message = "holds " + std::to_string(have) + " of " +
                      std::to_string(workload.serverCount) + " UltraServers; " +
                      planner.waitingFor(workload, workload.serverCount - have);
  } else if (pendingPhase) {
    outcome.state = WorkloadState::kAllocating;
    outcome.reason = "Reserving";
    outcome.message = "reserving " + std::to_string(have) + " UltraServer" + (have == 1 ? "" : "s");
  } else {
    outcome.state = WorkloadState::kAllocated;
    outcome.reason = "Allocated";
    std::string nodes;
    for (const Allocation& allocation : mine)
      nodes += (nodes.empty() ? "" : "; ") + allocation.ultraServer + ": " +
               joinStrings(allocation.nodes, ", ");
    outcome.message = "holds " + nodes;
  }
}

// Pass 2: allocate what the workloads miss, oldest first, and say where each stands.
void allocateWaiting(Planner& planner, const std::vector<const Workload*>& queue,
                     AllocationsByWorkload& kept, const std::set<std::string>& releasing,
                     std::map<std::string, WorkloadOutcome>& outcomes) {
  for (const Workload* workload : queue) {
    if (!workload->invalid.empty() || workload->deleting || releasing.count(workload->ref()))
      continue;
    std::vector<Allocation>& mine = kept[workload->ref()];
    placeMissing(planner, *workload, mine);
    describeHolding(planner, *workload, mine, outcomes[workload->ref()]);
  }
}

}  // namespace

AllocationPlan planAllocations(const std::vector<UltraServer>& servers,
                               const std::vector<Workload>& workloads,
                               const std::vector<Allocation>& current, const std::string& now,
                               std::chrono::seconds failureGrace) {
  Planner planner(servers, now);
  const GraceClock clock(now, failureGrace);
  AllocationPlan plan;

  std::vector<const Workload*> queue;
  std::set<std::string> known;
  for (const Workload& workload : workloads) {
    queue.push_back(&workload);
    known.insert(workload.ref());
  }
  std::sort(queue.begin(), queue.end(), [](const Workload* a, const Workload* b) {
    return a->createdAt != b->createdAt ? a->createdAt < b->createdAt : a->ref() < b->ref();
  });

  // The recorded allocations, by workload; those of workloads that are gone are released.
  AllocationsByWorkload recorded;
  for (const Allocation& allocation : current) {
    if (known.count(allocation.workloadRef)) recorded[allocation.workloadRef].push_back(allocation);
  }

  std::set<std::string> releasing;
  AllocationsByWorkload kept = settleRecorded(planner, clock, queue, recorded, plan, releasing);
  allocateWaiting(planner, queue, kept, releasing, plan.outcomes);

  for (auto& [ref, allocations] : kept) {
    for (Allocation& allocation : allocations)
      plan.allocations.push_back(std::move(allocation));
  }
  std::sort(plan.allocations.begin(), plan.allocations.end(),
            [](const Allocation& a, const Allocation& b) {
              return a.ultraServer != b.ultraServer ? a.ultraServer < b.ultraServer
                                                    : a.nodes < b.nodes;
            });
  return plan;
}

}  // namespace torus::ultraserver
