#include "ultraserver-operator/model/planner.h"

#include <algorithm>

namespace torus::ultraserver {

using contracts::kAllocationPending;

std::optional<std::vector<const MemberNode*>> Planner::fit(const UltraServer& server,
                                                           int size) const {
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

int Planner::freeCount(const UltraServer& server) const {
  return static_cast<int>(std::count_if(server.nodes.begin(), server.nodes.end(),
                                        [&](const MemberNode& m) { return free(m); }));
}

std::vector<Allocation> Planner::place(const Workload& workload, int count,
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
      candidates.push_back({server, *nodes, freeCount(*server) - static_cast<int>(nodes->size())});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.freeAfter != b.freeAfter ? a.freeAfter < b.freeAfter : a.server->name < b.server->name;
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

std::string Planner::waitingFor(const Workload& workload, int count) const {
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
    std::vector<std::string> busy;
    int notReady = 0;
    for (const MemberNode& member : server->nodes) {
      if (!member.healthy()) ++notReady;
      const std::string& holder = nodes_.at(member.name).heldBy;
      if (!holder.empty()) holders.insert(holder);
      if (!member.busyWith.empty()) busy.push_back(member.name + " (" + member.busyWith + ")");
    }
    seen += (seen.empty() ? "" : "; ") + server->name + ": " + std::to_string(freeCount(*server)) +
            " of " + std::to_string(server->nodes.size()) + " free";
    if (notReady > 0) seen += ", " + std::to_string(notReady) + " not Ready";
    for (const std::string& node : busy)
      seen += ", busy: " + node;
    for (const std::string& holder : holders)
      seen += ", held by " + holder;
  }
  if (ofType == 0) return message + "; the cluster has no UltraServer of that type";
  if (ofType > listed) seen += "; ...";
  return message + " (" + seen + ")";
}

}  // namespace torus::ultraserver
