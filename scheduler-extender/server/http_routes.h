// The extender's HTTP surface: POST <prefix>/filter, /prioritize, /bind, /preempt, plus GET
// /healthz and /metrics. Each verb's route parses the request, calls the scheduling cycle
// (verbs/scheduling_cycle.h) and renders its answer; no scheduling decision is made here. Bad
// requests are answered with the verb's Error field naming what was wrong (HTTP 200, so
// kube-scheduler shows our message rather than a bare status code), and the server keeps serving.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/base/memory_budget.h"
#include "common/http/http_server.h"
#include "scheduler-extender/gang/gang_members.h"
#include "scheduler-extender/gang/node_domains.h"
#include "scheduler-extender/gang/pod_groups.h"
#include "scheduler-extender/server/verb_metrics.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/state/pod_cache.h"
#include "scheduler-extender/state/scheduling_cycles.h"
#include "scheduler-extender/verbs/bind_backlog.h"
#include "scheduler-extender/verbs/pod_binder.h"

namespace torus::extender {

struct ExtenderContext {
  ClusterState& state;
  PodCache& pods;
  VerbMetrics& metrics;
  // nodeCacheCapable: false sends whole Nodes; when true, their instance-type labels teach the
  // extender about nodes it has not seen.
  bool learnNodesFromRequests = true;
  // Where binds go besides the state (the Kubernetes API); nullptr in a simulated cluster.
  PodBinder* binder = nullptr;
  // Pods as the Kubernetes API describes them (the pod informer), or nullptr in a simulated
  // cluster. When set, bind trusts only these (or a GET of the pod): a request to /filter may come
  // from anyone who reaches the port, and must not decide what a bind reserves.
  const PodCache* podsFromApi = nullptr;
  // What filter and prioritize answered each pod in its scheduling cycle: a bind goes only to a
  // node filter passed for that pod, and prioritize counts the cores expected for pods whose binds
  // have not arrived yet.
  std::shared_ptr<SchedulingCycles> cycles = std::make_shared<SchedulingCycles>();
  // With an API: the pod's node rules judged again on the API's Node and Pod at bind
  // (kube/bind_admission.h); unset in a simulated cluster.
  std::function<Result<void>(const PodDemand&, const std::string& node)> admitBind = nullptr;
  // Gangs' pods and the nodes' network domains: fed by the informers (ClusterSync) when there is
  // an API; without one, members are learnt from filter requests and no node has a domain.
  std::shared_ptr<GangMembers> gangMembers = std::make_shared<GangMembers>();
  std::shared_ptr<const NodeDomainIndex> nodeDomains = std::make_shared<NodeDomainIndex>();
  // Upstream PodGroups (served by the API server or not: then no pod's PodGroup is a gang).
  std::shared_ptr<const PodGroupIndex> podGroups = std::make_shared<PodGroupIndex>();
  // Filter answers a Neuron pod that states no scoring preference (PodDemand::statesPreferences)
  // with the one node the extender would score highest: kube-scheduler then skips scoring and
  // prioritize (it does when one node passes), which halves its round trips to us. Off: every node
  // that fits passes, and prioritize weighs them with kube-scheduler's score plugins.
  bool chooseInFilter = true;
  // Binds waiting on the API server; filter waits while too many are (verbs/bind_backlog.h).
  std::shared_ptr<BindBacklog> bindBacklog = std::make_shared<BindBacklog>();
  // GET /state lists every Neuron pod with its node and ids: off unless asked for.
  bool serveState = false;
  // /readyz: true once the state reflects the cluster; unset means always ready.
  std::function<bool()> ready = nullptr;
  // What requests being parsed may hold at once; nullptr means no bound.
  MemoryBudget* requestMemory = nullptr;
  // Appended to /metrics (what runs beside the verbs); unset means nothing.
  std::function<std::string()> moreMetrics = nullptr;
};

// Parsing a JSON body into the verb's arguments peaks at about this many times the body's size
// (measured: tests/bench/extender_load.sh).
inline constexpr std::size_t kParsePeakPerBodyByte = 24;
// Requests whose reservation is at least this large return freed memory to the system when done.
inline constexpr std::size_t kTrimAfterBytes = 64 * 1024 * 1024;

// The verbs under urlPrefix, GET /state and healthRoutes.
std::vector<http::Route> extenderRoutes(const std::string& urlPrefix, ExtenderContext context);
// GET /healthz, /readyz and /metrics (also served apart: --health-listen).
std::vector<http::Route> healthRoutes(ExtenderContext context);

}  // namespace torus::extender
