// Planner: the allocator's view of who holds which node of which UltraServer during one pass,
// and where an allocation of a given size fits best (model/allocator.h states the rules).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ultraserver-operator/model/ultraserver_model.h"

namespace torus::ultraserver {

// The key that groups `member` with its pair partner; a node in no pair is keyed by its own name
// (node names cannot start with ' ', so such a key never equals a pair id).
inline std::string pairKey(const MemberNode& member) {
  return member.pairId.empty() ? " " + member.name : member.pairId;
}

// One node during a pass: where it is, and the workload that holds it ("" while free).
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

  // The node as the pass sees it (whether Ready, since when not); nullptr when it is gone. A
  // cordon does not make a node not Ready: it keeps new workloads off, and moves nothing that
  // already runs there (as kubectl cordon does to pods).
  const MemberNode* member(const std::string& node) const {
    const auto found = nodes_.find(node);
    return found == nodes_.end() ? nullptr : found->second.member;
  }
  // Free for a new allocation: Ready, schedulable, held by no workload, busy with no claim.
  bool free(const MemberNode& member) const {
    return member.healthy() && member.busyWith.empty() && nodes_.at(member.name).heldBy.empty();
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
  std::optional<std::vector<const MemberNode*>> fit(const UltraServer& server, int size) const;

  // The nodes of `server` that are Ready, schedulable and held by nobody.
  int freeCount(const UltraServer& server) const;

  // Up to `count` new allocations for `workload`, on UltraServers not in `exclude`, best fit
  // first. Returns fewer when fewer fit (the caller decides whether a partial set may be kept).
  std::vector<Allocation> place(const Workload& workload, int count,
                                const std::set<std::string>& exclude) const;

  // What a workload that does not fit waits for, for its status.
  std::string waitingFor(const Workload& workload, int count) const;

 private:
  std::string now_;
  std::vector<const UltraServer*> servers_;
  std::map<std::string, NodeState> nodes_;
};

}  // namespace torus::ultraserver
