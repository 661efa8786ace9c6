#include "scheduler-extender/gang/gang_planner.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace torus::extender {
namespace {

// Whole devices before cores, larger before smaller: the big pods pick their nodes first.
void largestFirst(std::vector<PodDemand>& pods) {
  std::stable_sort(pods.begin(), pods.end(), [](const PodDemand& a, const PodDemand& b) {
    if (a.unit != b.unit) return a.unit == topology::AllocationUnit::kDevice;
    return a.count > b.count;
  });
}

// The one domain at `level` every placed member is in; nullopt when they are in different ones
// or some are not labelled. With no placed member, "" (any domain).
std::optional<std::string> pinnedDomain(const NodeDomainIndex& domains,
                                        const std::vector<std::string>& placedNodes,
                                        std::size_t level) {
  std::set<std::string> seen;
  for (const std::string& node : placedNodes)
    seen.insert(domains.of(node).levels[level]);
  if (seen.empty()) return "";
  if (seen.size() > 1 || seen.begin()->empty()) return std::nullopt;
  return *seen.begin();
}

}  // namespace

Result<GangPlan> planGang(const ClusterState& state, const NodeDomainIndex& domains,
                          std::vector<PodDemand> unplaced,
                          const std::vector<std::string>& placedNodes,
                          const std::vector<std::string>& candidates) {
  largestFirst(unplaced);
  GangPlan plan;
  plan.pods = unplaced;
  if (unplaced.empty()) return plan;
  // Each candidate's domains, read once for every level.
  std::vector<NodeDomains> where;
  where.reserve(candidates.size());
  for (const std::string& node : candidates)
    where.push_back(domains.of(node));
  for (std::size_t level = 0; level < kDomainLevels; ++level) {
    const auto pinned = pinnedDomain(domains, placedNodes, level);
    if (!pinned) continue;
    std::map<std::string, std::vector<std::string>> byDomain;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const std::string& domain = where[i].levels[level];
      if (!domain.empty() && (pinned->empty() || domain == *pinned))
        byDomain[domain].push_back(candidates[i]);
    }
    std::optional<ClusterState::GroupPlacement> best;
    std::string bestDomain;
    for (const auto& [domain, nodes] : byDomain) {
      auto placement = state.placeGroup(nodes, unplaced, true);
      if (placement && (!best || placement->freeCoresLeft < best->freeCoresLeft)) {
        best = std::move(*placement);
        bestDomain = domain;
        if (best->freeCoresLeft == 0) break;  // nothing fits better than a domain filled exactly
      }
    }
    if (best) {
      plan.nodes = std::move(best->nodes);
      plan.where = std::string(domainLevelName(level)) + " " + bestDomain;
      return plan;
    }
  }
  auto anywhere = state.placeGroup(candidates, unplaced);
  if (!anywhere) {
    return makeError(ErrorCode::kResourceExhausted,
                     "the feasible nodes have " + anywhere.error().message + " at once");
  }
  plan.nodes = std::move(anywhere->nodes);
  plan.where = "feasible nodes in no shared UltraServer or network layer";
  return plan;
}

}  // namespace torus::extender
