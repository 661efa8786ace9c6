// SchedulingCycle: kube-scheduler's cycle for one pod as the extender takes part in it — filter,
// prioritize, bind and preempt — with what the cycle keeps between those calls and the checks a
// bind must pass. The verbs of verbs.h and gang_verbs.h decide placements; this decides when and
// for whom: the pod's gang from its PodGroup, the node chosen in filter and held for the pod, the
// wait for room in the bind backlog, the refusal of a bind filter did not pass, admission on the
// API's objects, and the end of the cycle. The HTTP routes only parse a request, call one of these
// and render the answer (server/http_routes.cc).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "scheduler-extender/gang/gang_members.h"
#include "scheduler-extender/gang/node_domains.h"
#include "scheduler-extender/gang/pod_groups.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/state/pod_cache.h"
#include "scheduler-extender/state/scheduling_cycles.h"
#include "scheduler-extender/verbs/bind_backlog.h"
#include "scheduler-extender/verbs/gang_verbs.h"
#include "scheduler-extender/verbs/pod_binder.h"
#include "scheduler-extender/verbs/verbs.h"

namespace torus::extender {

// A node a filter or prioritize request carried as a whole Node (nodeCacheCapable: false).
struct NodeSeen {
  std::string name;
  std::string instanceType;
};

// What kube-scheduler's bind request names: only the pod and the node.
struct BindRequest {
  std::string podName;
  std::string podNamespace;
  std::string podUid;
  std::string node;
};

class SchedulingCycle {
 public:
  // What the cycle reads and keeps; each is described where ExtenderContext sets it
  // (server/http_routes.h).
  struct Ports {
    ClusterState& state;
    PodCache& pods;
    const PodCache* podsFromApi = nullptr;
    PodBinder* binder = nullptr;
    std::shared_ptr<SchedulingCycles> cycles;
    std::shared_ptr<BindBacklog> backlog;
    std::function<Result<void>(const PodDemand&, const std::string& node)> admitBind;
    std::shared_ptr<GangMembers> gangMembers;
    std::shared_ptr<const NodeDomainIndex> nodeDomains;
    std::shared_ptr<const PodGroupIndex> podGroups;
    bool learnNodesFromRequests = true;
    bool chooseInFilter = true;
  };

  explicit SchedulingCycle(Ports ports) : ports_(std::move(ports)) {}

  // The nodes the pod may go to now; FilterResult::error says why the pod waits (its PodGroup
  // not known yet).
  FilterResult filter(PodDemand pod, const std::vector<std::string>& nodeNames,
                      const std::vector<NodeSeen>& nodesSeen);
  std::vector<HostPriority> prioritize(PodDemand pod, const std::vector<std::string>& nodeNames,
                                       const std::vector<NodeSeen>& nodesSeen);
  // "" when bound; else why not (the pod is scheduled again).
  std::string bind(const BindRequest& request);
  // Victims by node; none for a gang's member (evicting for one member frees part of a gang).
  std::map<std::string, std::vector<std::string>> preempt(
      PodDemand pod, const std::map<std::string, std::vector<std::string>>& victimUidsByNode);

 private:
  void learnNodes(const std::vector<NodeSeen>& nodesSeen);
  Result<PodDemand> findPod(const BindRequest& request);
  std::string resolvePodGroup(PodDemand& pod) const;
  void rememberFilterAnswer(const PodDemand& pod, const FilterResult& result);
  FilterResult filterPod(const PodDemand& pod, const std::vector<std::string>& nodeNames);
  std::string unfilteredBind(const BindRequest& request) const;
  Gangs gangs() const;

  Ports ports_;
};

}  // namespace torus::extender
