#include "scheduler-extender/gang/ultraserver_job.h"

#include <set>
#include <string>

namespace torus::extender {

std::optional<int> ultraServerJobNodes(const ClusterState& state, const NodeDomainIndex& domains,
                                       const std::vector<GangMember>& members) {
  std::set<std::string> nodes;
  for (const GangMember& member : members) {
    if (!member.demand.wantsNeuron()) continue;
    const auto held = state.allocationOf(member.demand.uid);
    if (!held) return std::nullopt;
    const auto node = state.node(held->node);
    if (!node || held->cores.size() != node->model.logicalCoreCount()) return std::nullopt;
    if (!nodes.insert(held->node).second) return std::nullopt;
  }
  const int count = static_cast<int>(nodes.size());
  if (count != 1 && count != 2 && count != 4) return std::nullopt;
  const NodeDomains first = domains.of(*nodes.begin());
  if (first.levels[0].empty()) return std::nullopt;
  for (const std::string& name : nodes) {
    const NodeDomains these = domains.of(name);
    if (these.levels[0] != first.levels[0]) return std::nullopt;
    if (count == 2 &&
        (these.ultraServerPair.empty() || these.ultraServerPair != first.ultraServerPair)) {
      return std::nullopt;
    }
  }
  return count;
}

}  // namespace torus::extender
