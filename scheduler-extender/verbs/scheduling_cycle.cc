#include "scheduler-extender/verbs/scheduling_cycle.h"

#include <chrono>
#include <optional>

#include "common/base/log.h"
#include "scheduler-extender/gang/ultraserver_job.h"
#include "scheduler-extender/verbs/gang_verbs.h"

namespace torus::extender {
namespace {

using Clock = std::chrono::steady_clock;

bool isGangMember(const PodDemand& pod) {
  return pod.wantsNeuron() && (pod.gang || !pod.gangProblem.empty());
}

}  // namespace

void SchedulingCycle::learnNodes(const std::vector<NodeSeen>& nodesSeen) {
  if (!ports_.learnNodesFromRequests) return;
  for (const NodeSeen& node : nodesSeen) {
    if (node.instanceType.empty() || ports_.state.hasNode(node.name)) continue;
    if (auto added = ports_.state.upsertNode(node.name, node.instanceType); added) {
      TORUS_LOG(Info, Extender, "learned node from request", {"node", node.name},
                {"instance_type", node.instanceType});
    }
  }
}

// The pod's gang from its PodGroup (spec.schedulingGroup), when it has no gang labels and the
// group has a gang policy. Returns why the pod cannot be judged yet, or "".
std::string SchedulingCycle::resolvePodGroup(PodDemand& pod) const {
  if (pod.gang || !pod.gangProblem.empty() || pod.podGroup.empty() || !pod.wantsNeuron() ||
      !ports_.podGroups->served()) {
    return "";
  }
  const std::string name = pod.namespace_ + "/" + pod.podGroup;
  const auto group = ports_.podGroups->find(pod.namespace_, pod.podGroup);
  if (!group.found) return "PodGroup " + name + " is not known yet; the pod is tried again";
  if (!group.problem.empty()) {
    pod.gangProblem = "PodGroup " + name + ": " + group.problem;
  } else if (group.gangMinCount) {
    pod.gang = GangRef{pod.podGroup, *group.gangMinCount, true};
  }
  return "";
}

// The pod's filter answer is kept for its bind; when only one node passed, kube-scheduler skips
// prioritize and binds there, so the pod is expected there already.
void SchedulingCycle::rememberFilterAnswer(const PodDemand& pod, const FilterResult& result) {
  if (!pod.wantsNeuron() || pod.uid.empty()) return;
  const auto now = Clock::now();
  ports_.cycles->filtered(pod.uid, result.nodeNames, now);
  if (result.nodeNames.size() != 1 || isGangMember(pod)) return;
  if (auto trial = ports_.state.tryPlace(result.nodeNames.front(), pod, true)) {
    ports_.cycles->hold(pod.uid, result.nodeNames.front(), std::move(trial->cores), now);
  }
}

// A pod that leaves the choice to the extender (chooseInFilter: no stated preference, not in a
// gang) passes only on the node it would score highest, counting other pods' holds, and is held
// there. Any other pod passes on every node it fits for kube-scheduler's scoring.
FilterResult SchedulingCycle::filterPod(const PodDemand& pod,
                                        const std::vector<std::string>& nodeNames) {
  if (!ports_.chooseInFilter || !pod.wantsNeuron() || pod.statesPreferences || pod.uid.empty() ||
      nodeNames.size() < 2) {
    FilterResult result = extender::filter(ports_.state, pod, nodeNames);
    rememberFilterAnswer(pod, result);
    return result;
  }
  const auto now = Clock::now();
  std::optional<ExpectedPlacement> best;
  FilterResult result = filterChoosing(ports_.state, pod, nodeNames,
                                       ports_.cycles->heldForOthers(pod.uid, now), best);
  if (!best) {
    rememberFilterAnswer(pod, result);
    return result;
  }
  ports_.cycles->filtered(pod.uid, result.nodeNames, now);
  ports_.cycles->hold(pod.uid, best->node, std::move(best->cores), now);
  return result;
}

Gangs SchedulingCycle::gangs() const {
  // With an API, a filter request cannot vouch for its pod: members come from the informer.
  return Gangs{*ports_.gangMembers, *ports_.nodeDomains, ports_.binder,
               ports_.podsFromApi == nullptr};
}

FilterResult SchedulingCycle::filter(PodDemand pod, const std::vector<std::string>& nodeNames,
                                     const std::vector<NodeSeen>& nodesSeen) {
  learnNodes(nodesSeen);
  ports_.pods.remember(pod);
  if (pod.wantsNeuron()) ports_.backlog->waitForRoom();
  if (std::string wait = resolvePodGroup(pod); !wait.empty()) {
    FilterResult result;
    result.error = std::move(wait);
    return result;
  }
  FilterResult result;
  if (isGangMember(pod)) {
    result = filterGangMember(ports_.state, gangs(), pod, nodeNames);
    rememberFilterAnswer(pod, result);
  } else {
    result = filterPod(pod, nodeNames);
  }
  TORUS_LOG(Debug, Extender, "filter", {"pod", pod.key()}, {"count", pod.count},
            {"nodes", static_cast<int>(nodeNames.size())},
            {"passed", static_cast<int>(result.nodeNames.size())});
  return result;
}

std::vector<HostPriority> SchedulingCycle::prioritize(PodDemand pod,
                                                      const std::vector<std::string>& nodeNames,
                                                      const std::vector<NodeSeen>& nodesSeen) {
  learnNodes(nodesSeen);
  ports_.pods.remember(pod);
  resolvePodGroup(pod);
  if (isGangMember(pod)) return prioritizeGangMember(ports_.state, pod, nodeNames);
  const auto now = Clock::now();
  const HeldCores held = ports_.cycles->heldForOthers(pod.uid, now);
  ExpectedPlacement best;
  auto priorities = extender::prioritize(ports_.state, pod, nodeNames, &held, &best);
  if (!best.node.empty()) ports_.cycles->hold(pod.uid, best.node, std::move(best.cores), now);
  return priorities;
}

// Bind carries only the pod's name and UID: its demand comes from filter, or from the API when
// filter ran before this extender did (a restart between the two).
Result<PodDemand> SchedulingCycle::findPod(const BindRequest& request) {
  const std::string key = request.podNamespace + "/" + request.podName;
  if (ports_.binder == nullptr) {
    // A simulated cluster has no API: the demand filter saw is all there is.
    if (auto cached = ports_.pods.find(request.podUid)) return *cached;
    return makeError(ErrorCode::kNotFound, "pod " + key + " (uid " + request.podUid +
                                               ") was not seen in filter; kube-scheduler will "
                                               "retry it");
  }
  if (ports_.podsFromApi != nullptr) {
    if (auto known = ports_.podsFromApi->find(request.podUid)) return *known;
  }
  // Not watched yet (a bind right after the pod was created, or after a restart): ask the API.
  auto fetched = ports_.binder->fetchPod(request.podNamespace, request.podName);
  if (!fetched) return std::move(fetched).error().withContext("looking up pod " + key);
  if (fetched->uid != request.podUid) {
    return makeError(ErrorCode::kNotFound, "pod " + key + " now has uid " + fetched->uid +
                                               ", not " + request.podUid + "; it was replaced");
  }
  return fetched;
}

// A bind that repeats one already done (the same pod on the same node) is answered again as it
// was; any other must be to a node this extender's filter passed for the pod in its cycle.
std::string SchedulingCycle::unfilteredBind(const BindRequest& request) const {
  if (const auto held = ports_.state.allocationOf(request.podUid);
      held && held->node == request.node) {
    return "";
  }
  return ports_.cycles->bindRefusal(request.podUid, request.podNamespace + "/" + request.podName,
                                    request.node, Clock::now());
}

std::string SchedulingCycle::bind(const BindRequest& request) {
  if (std::string refusal = unfilteredBind(request); !refusal.empty()) {
    TORUS_LOG(Warn, Extender, "bind refused", {"pod", request.podNamespace + "/" + request.podName},
              {"node", request.node}, {"error", refusal});
    return refusal;
  }
  // Whatever happens next, the pod's cycle ends here (a refused pod is scheduled again).
  struct CycleEnd {
    SchedulingCycles& cycles;
    const std::string& uid;
    ~CycleEnd() { cycles.finished(uid); }
  } cycleEnd{*ports_.cycles, request.podUid};
  auto pod = findPod(request);
  if (!pod) {
    TORUS_LOG(Warn, Extender, "bind for an unknown pod", {"error", pod.error().message});
    return pod.error().message;
  }
  if (ports_.admitBind) {
    if (auto admitted = ports_.admitBind(*pod, request.node); !admitted) {
      const std::string refusal = "bind of pod " + pod->key() + " to " + request.node +
                                  " refused: " + admitted.error().message;
      TORUS_LOG(Warn, Extender, "bind refused", {"pod", pod->key()}, {"node", request.node},
                {"error", refusal});
      return refusal;
    }
  }
  resolvePodGroup(*pod);
  std::optional<int> ultraServerNodes;
  if (isGangMember(*pod) && pod->gang) {
    ultraServerNodes = ultraServerJobNodes(ports_.state, *ports_.nodeDomains,
                                           ports_.gangMembers->of(pod->gangKey()));
  }
  const BindBacklog::Entry inFlight = ports_.backlog->enter();
  auto allocation =
      bindPod(ports_.state, *pod, request.node, ports_.binder, ultraServerNodes,
              ports_.cycles->heldOnNodeForOthers(pod->uid, request.node, Clock::now()));
  if (!allocation) {
    TORUS_LOG(Warn, Extender, "bind refused", {"pod", pod->key()}, {"node", request.node},
              {"error", allocation.error().message});
    return allocation.error().message;
  }
  TORUS_LOG(Info, Extender, "bound", {"pod", pod->key()}, {"node", request.node},
            {"resource", pod->resourceName}, {"ids", allocation->ids.toRangeString()});
  return "";
}

std::map<std::string, std::vector<std::string>> SchedulingCycle::preempt(
    PodDemand pod, const std::map<std::string, std::vector<std::string>>& victimUidsByNode) {
  ports_.pods.remember(pod);
  resolvePodGroup(pod);
  if (isGangMember(pod)) return {};
  return extender::preempt(ports_.state, pod, victimUidsByNode);
}

}  // namespace torus::extender
