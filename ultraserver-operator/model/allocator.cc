#include "ultraserver-operator/model/allocator.h"

#include <algorithm>
#include <optional>
#include <set>

#include "common/base/strings.h"

namespace torus::ultraserver {
namespace {

using contracts::kAllocationBound;
using contracts::kAllocationPending;

// The key that groups `member` with its pair partner; a node in no pair is keyed by its own name
// (node names cannot start with ' ', so such a key never equals a pair id).
std::string pairKey(const MemberNode& member) {
  return member.pairId.empty() ? " " + member.name : member.pairId;
}

struct NodeState {
  const UltraServer* server = nullptr;
  const MemberNode* member = nullptr;
  std::string heldBy;  // workload ref
};

class Planner {
 public:
  Planner(const std::vector<UltraServer>& servers, const std::string& now) : now_(now) {
    for (const UltraServer& server : servers) {
      servers_.push_back(&server);
      for (const MemberNode& member : server.nodes)
        nodes_[member.name] = {&server, &member, ""};
    }
  }

  bool healthy(const std::string& node) const {
    const auto found = nodes_.find(node);
    return found != nodes_.end() && found->second.member->healthy();
  }
  bool free(const MemberNode& member) const {
    return member.healthy() && nodes_.at(member.name).heldBy.empty();
  }
  void hold(const Allocation& allocation) {
    for (const std::string& node : allocation.nodes) {
      if (auto found = nodes_.find(node); found != nodes_.end())
        found->second.heldBy = allocation.workloadRef;
    }
  }
  void release(const Allocation& allocation) {
    for (const std::string& node : allocation.nodes) {
      if (auto found = nodes_.find(node);
          found != nodes_.end() && found->second.heldBy == allocation.workloadRef) {
        found->second.heldBy.clear();
      }
    }
  }

  // The nodes of `server` an allocation of `size` would take, or nullopt when none fits.
  std::optional<std::vector<const MemberNode*>> fit(const UltraServer& server, int size) const {
    std::vector<const MemberNode*> freeNodes;
    for (const MemberNode& member : server.nodes) {
      if (free(member)) freeNodes.push_back(&member);
    }
    if (size == 4) {
      if (server.nodes.size() != 4 || freeNodes.size() != 4) return std::nullopt;
      return freeNodes;
    }
    // Pairs: the nodes sharing server-id-2 (contracts::pairOf); a node in no pair counts as a
    // pair of its own, which a 2-node allocation can never take.
    std::map<std::string, std::vector<const MemberNode*>> pairs;
    std::map<std::string, int> freeInPair;
    for (const MemberNode& member : server.nodes) {
      const std::string pair = pairKey(member);
      pairs[pair].push_back(&member);
      if (free(member)) ++freeInPair[pair];
    }
    if (size == 2) {
      std::optional<std::vector<const MemberNode*>> best;
      for (const auto& [pair, members] : pairs) {
        if (members.size() != 2 || freeInPair[pair] != 2) continue;
        if (!best || members.front()->nodeId < best->front()->nodeId) best = members;
      }
      return best;
    }
    // One node: the one whose pair partner is taken, so whole pairs stay whole.
    const MemberNode* best = nullptr;
    int bestFreeInPair = 3;
    for (const MemberNode* member : freeNodes) {
      const std::string pair = pairKey(*member);
      if (freeInPair[pair] < bestFreeInPair) {
        best = member;
        bestFreeInPair = freeInPair[pair];
      }
    }
    if (best == nullptr) return std::nullopt;
    return std::vector<const MemberNode*>{best};
  }

  int freeCount(const UltraServer& server) const {
    return static_cast<int>(std::count_if(server.nodes.begin(), server.nodes.end(),
                                          [&](const MemberNode& m) { return free(m); }));
  }

  // Up to `count` new allocations for `workload`, on UltraServers not in `exclude`, best fit
  // first. Returns fewer when fewer fit (the caller decides whether a partial set may be kept).
  std::vector<Allocation> place(const Workload& workload, int count,
                                const std::set<std::string>& exclude) const {
    struct Candidate {
      const UltraServer* server;
      std::vector<const MemberNode*> nodes;
      int freeAfter;
    };
    std::vector<Candidate> candidates;
    for (const UltraServer* server : servers_) {
      if (server->instanceType != workload.instanceType || exclude.count(server->name)) continue;
      if (auto nodes = fit(*server, workload.topologySize)) {
        candidates.push_back(
            {server, *nodes, freeCount(*server) - static_cast<int>(nodes->size())});
      }
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.freeAfter != b.freeAfter ? a.freeAfter < b.freeAfter
                                        : a.server->name < b.server->name;
    });
    std::vector<Allocation> placed;
    for (const Candidate& candidate : candidates) {
      if (static_cast<int>(placed.size()) == count) break;
      Allocation allocation;
      allocation.workloadRef = workload.ref();
      allocation.ultraServer = candidate.server->name;
      for (const MemberNode* node : candidate.nodes)
        allocation.nodes.push_back(node->name);
      allocation.phase = kAllocationPending;
      allocation.allocatedAt = now_;
      placed.push_back(std::move(allocation));
    }
    return placed;
  }

  // What a workload that does not fit waits for, for its status.
  std::string waitingFor(const Workload& workload, int count) const {
    std::string message = "waiting for " + std::to_string(count) + " UltraServer" +
                          (count == 1 ? "" : "s") + " of " + workload.instanceType + " with " +
                          std::to_string(workload.topologySize) + " free, Ready node" +
                          (workload.topologySize == 1 ? "" : "s") +
                          (workload.topologySize == 2 ? " forming a NeuronLink pair" : "");
    std::string seen;
    int listed = 0;
    int ofType = 0;
    for (const UltraServer* server : servers_) {
      if (server->instanceType != workload.instanceType) continue;
      ++ofType;
      if (listed == 6) continue;
      ++listed;
      std::set<std::string> holders;
      int notReady = 0;
      for (const MemberNode& member : server->nodes) {
        if (!member.healthy()) ++notReady;
        const std::string& holder = nodes_.at(member.name).heldBy;
        if (!holder.empty()) holders.insert(holder);
      }
      seen += (seen.empty() ? "" : "; ") + server->name + ": " +
              std::to_string(freeCount(*server)) + " of " + std::to_string(server->nodes.size()) +
              " free";
      if (notReady > 0) seen += ", " + std::to_string(notReady) + " not Ready";
      for (const std::string& holder : holders)
        seen += ", held by " + holder;
    }
    if (ofType == 0) return message + "; the cluster has no UltraServer of that type";
    if (ofType > listed) seen += "; ...";
    return message + " (" + seen + ")";
  }

 private:
  std::string now_;
  std::vector<const UltraServer*> servers_;
  std::map<std::string, NodeState> nodes_;
};

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

// Reacts to the nodes of `mine` that are no longer Ready, as the workload's failure strategy
// says; `mine` is left with what the workload keeps (nothing for RestartAll).
void applyFailureStrategy(const Planner& planner, const Workload& workload,
                          std::vector<Allocation>& mine, WorkloadOutcome& outcome) {
  std::vector<std::string> failed;
  std::vector<Allocation> healthy;
  std::vector<Allocation> affected;
  for (const Allocation& allocation : mine) {
    bool ok = true;
    for (const std::string& node : allocation.nodes) {
      if (!planner.healthy(node)) {
        failed.push_back(node);
        ok = false;
      }
    }
    (ok ? healthy : affected).push_back(allocation);
  }
  if (failed.empty()) return;
  outcome.degraded = true;
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

// Pass 1: settle what is recorded (confirm, release, react to failed nodes), so that pass 2 sees
// every node that stays held. Returns what each workload keeps.
AllocationsByWorkload settleRecorded(Planner& planner, const std::vector<const Workload*>& queue,
                                     AllocationsByWorkload& recorded,
                                     std::map<std::string, WorkloadOutcome>& outcomes) {
  AllocationsByWorkload kept;
  for (const Workload* workload : queue) {
    WorkloadOutcome& outcome = outcomes[workload->ref()];
    std::vector<Allocation> mine = recorded[workload->ref()];
    if (!workload->invalid.empty()) {
      outcome.state = WorkloadState::kFailed;
      outcome.reason = "InvalidSpec";
      outcome.message = workload->invalid;
      outcome.restartAllPods = !mine.empty();
      continue;
    }
    if (workload->deleting) {
      outcome.state = WorkloadState::kDeallocating;
      // Held until its pods are gone, so nobody else's pod can land on a chip still in use.
      if (workload->podsRemain) {
        for (Allocation& allocation : mine)
          planner.hold(allocation);
        kept[workload->ref()] = mine;
        outcome.reason = "PodsTerminating";
        outcome.message = "releasing its UltraServers once its pods are gone";
        outcome.restartAllPods = true;
      } else {
        outcome.reason = "Released";
        outcome.message = "its UltraServers are released";
      }
      continue;
    }
    if (mine.empty() || !recordedSetStands(*workload, mine, outcome)) continue;
    applyFailureStrategy(planner, *workload, mine, outcome);
    if (mine.empty()) continue;  // RestartAll released them all
    for (const Allocation& allocation : mine)
      planner.hold(allocation);
    kept[workload->ref()] = mine;
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
                     AllocationsByWorkload& kept,
                     std::map<std::string, WorkloadOutcome>& outcomes) {
  for (const Workload* workload : queue) {
    if (!workload->invalid.empty() || workload->deleting) continue;
    std::vector<Allocation>& mine = kept[workload->ref()];
    placeMissing(planner, *workload, mine);
    describeHolding(planner, *workload, mine, outcomes[workload->ref()]);
  }
}

}  // namespace

AllocationPlan planAllocations(const std::vector<UltraServer>& servers,
                               const std::vector<Workload>& workloads,
                               const std::vector<Allocation>& current, const std::string& now) {
  Planner planner(servers, now);
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

  AllocationsByWorkload kept = settleRecorded(planner, queue, recorded, plan.outcomes);
  allocateWaiting(planner, queue, kept, plan.outcomes);

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
