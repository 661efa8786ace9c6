// planGang: where a gang's pods go, all of them at once. In one UltraServer when they fit there,
// else among nodes sharing the closest network layer, else anywhere they fit; never some of them.
// Pure: reads ClusterState and the nodes' domains, records nothing.
#pragma once

#include <string>
#include <vector>

#include "common/base/result.h"
#include "scheduler-extender/gang/node_domains.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/state/pod_demand.h"

namespace torus::extender {

struct GangPlan {
  std::vector<PodDemand> pods;     // the members placed by this plan
  std::vector<std::string> nodes;  // the node of each, in order
  std::string where;               // for people: "UltraServer us-0a1b", "any nodes", ...
};

// Places `unplaced` together on some of `candidates` (the nodes kube-scheduler found feasible).
// Members already placed (`placedNodes`) pin the domain: the others join them in it when they
// fit there. Within a level, best fit: the domain left with the fewest free cores, so partly
// used UltraServers fill before whole ones are broken. ResourceExhausted (saying how many fit)
// when the whole gang fits nowhere.
Result<GangPlan> planGang(const ClusterState& state, const NodeDomainIndex& domains,
                          std::vector<PodDemand> unplaced,
                          const std::vector<std::string>& placedNodes,
                          const std::vector<std::string>& candidates);

}  // namespace torus::extender
