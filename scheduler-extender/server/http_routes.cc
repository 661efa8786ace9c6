#include "scheduler-extender/server/http_routes.h"

#include <chrono>
#include <optional>

#include "common/base/log.h"
#include "scheduler-extender/gang/ultraserver_job.h"
#include "scheduler-extender/server/extender_json.h"
#include "scheduler-extender/server/state_json.h"
#include "scheduler-extender/verbs/gang_verbs.h"
#include "scheduler-extender/verbs/verbs.h"

namespace torus::extender {
namespace {

using Clock = std::chrono::steady_clock;

http::Response json(std::string body) {
  return {200, "application/json", std::move(body)};
}

// Runs one verb: times it, counts it, and turns a thrown exception into an error answer.
template <typename Handle>
http::Response serve(ExtenderContext context, const std::string& verb, const http::Request& request,
                     Handle handle) {
  const auto started = Clock::now();
  bool ok = true;
  http::Response response;
  std::optional<MemoryBudget::Lease> memory;
  if (context.requestMemory != nullptr) {
    const std::size_t peak = request.body.size() * kParsePeakPerBodyByte;
    memory = context.requestMemory->reserve(peak, std::chrono::seconds(5));
    if (!memory) {
      TORUS_LOG(Warn, Extender, "too many large requests at once; answering 503", {"verb", verb},
                {"body_bytes", request.body.size()});
      context.metrics.record(verb, false, Clock::now() - started);
      return {503, "text/plain",
              "extender busy: requests being parsed hold " +
                  std::to_string(context.requestMemory->inUse() >> 20) + " of " +
                  std::to_string(context.requestMemory->total() >> 20) +
                  " MiB (--request-memory-mib); retry\n"};
    }
  }
  try {
    response = handle(request.body, ok);
  } catch (const std::exception& error) {
    ok = false;
    TORUS_LOG(Error, Extender, "verb failed unexpectedly", {"verb", verb}, {"error", error.what()});
    response = {500, "text/plain", std::string("internal error: ") + error.what() + "\n"};
  }
  context.metrics.record(verb, ok, Clock::now() - started);
  return response;
}

// A request kube-scheduler sent that we cannot parse: counted as an error and logged once here;
// each verb then answers in its own format.
void rejectBadRequest(bool& ok, const char* verb, const Error& error) {
  ok = false;
  TORUS_LOG(Warn, Extender, "bad request", {"verb", verb}, {"error", error.message});
}

void learnNodes(ExtenderContext& context, const ExtenderArgs& args) {
  if (!context.learnNodesFromRequests || !args.fullNodes) return;
  for (const NodeInfo& node : args.nodes) {
    if (node.instanceType.empty() || context.state.hasNode(node.name)) continue;
    if (auto added = context.state.upsertNode(node.name, node.instanceType); added) {
      TORUS_LOG(Info, Extender, "learned node from request", {"node", node.name},
                {"instance_type", node.instanceType});
    }
  }
}

// Bind carries only the pod's name and UID: its demand comes from filter, or from the API when
// filter ran before this extender did (a restart between the two).
Result<PodDemand> findPod(ExtenderContext& context, const BindingArgs& args) {
  const std::string key = args.podNamespace + "/" + args.podName;
  if (context.binder == nullptr) {
    // A simulated cluster has no API: the demand filter saw is all there is.
    if (auto cached = context.pods.find(args.podUid)) return *cached;
    return makeError(ErrorCode::kNotFound, "pod " + key + " (uid " + args.podUid +
                                               ") was not seen in filter; kube-scheduler will "
                                               "retry it");
  }
  if (context.podsFromApi != nullptr) {
    if (auto known = context.podsFromApi->find(args.podUid)) return *known;
  }
  // Not watched yet (a bind right after the pod was created, or after a restart): ask the API.
  auto fetched = context.binder->fetchPod(args.podNamespace, args.podName);
  if (!fetched) return std::move(fetched).error().withContext("looking up pod " + key);
  if (fetched->uid != args.podUid) {
    return makeError(ErrorCode::kNotFound, "pod " + key + " now has uid " + fetched->uid +
                                               ", not " + args.podUid + "; it was replaced");
  }
  return fetched;
}

bool isGangMember(const PodDemand& pod) {
  return pod.wantsNeuron() && (pod.gang || !pod.gangProblem.empty());
}

// The pod's gang from its PodGroup (spec.schedulingGroup), when it has no gang labels and the
// group has a gang policy. Returns why the pod cannot be judged yet, or "".
std::string resolvePodGroup(const ExtenderContext& context, PodDemand& pod) {
  if (pod.gang || !pod.gangProblem.empty() || pod.podGroup.empty() || !pod.wantsNeuron() ||
      !context.podGroups->served()) {
    return "";
  }
  const std::string name = pod.namespace_ + "/" + pod.podGroup;
  const auto group = context.podGroups->find(pod.namespace_, pod.podGroup);
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
void rememberFilterAnswer(ExtenderContext& context, const PodDemand& pod,
                          const FilterResult& result) {
  if (!pod.wantsNeuron() || pod.uid.empty()) return;
  const auto now = Clock::now();
  context.cycles->filtered(pod.uid, result.nodeNames, now);
  if (result.nodeNames.size() != 1 || isGangMember(pod)) return;
  if (auto trial = context.state.tryPlace(result.nodeNames.front(), pod, true)) {
    context.cycles->hold(pod.uid, result.nodeNames.front(), std::move(trial->cores), now);
  }
}

// A pod that leaves the choice to the extender (chooseInFilter: no stated preference, not in a
// gang) passes only on the node it would score highest, counting other pods' holds, and is held
// there. Any other pod passes on every node it fits for kube-scheduler's scoring.
FilterResult filterPod(ExtenderContext& context, const PodDemand& pod,
                       const std::vector<std::string>& nodeNames) {
  if (!context.chooseInFilter || !pod.wantsNeuron() || pod.statesPreferences || pod.uid.empty() ||
      nodeNames.size() < 2) {
    FilterResult result = filter(context.state, pod, nodeNames);
    rememberFilterAnswer(context, pod, result);
    return result;
  }
  const auto now = Clock::now();
  std::optional<ExpectedPlacement> best;
  FilterResult result = filterChoosing(context.state, pod, nodeNames,
                                       context.cycles->heldForOthers(pod.uid, now), best);
  if (!best) {
    rememberFilterAnswer(context, pod, result);
    return result;
  }
  context.cycles->filtered(pod.uid, result.nodeNames, now);
  context.cycles->hold(pod.uid, best->node, std::move(best->cores), now);
  return result;
}

// A bind that repeats one already done (the same pod on the same node) is answered again as it
// was; any other must be to a node this extender's filter passed for the pod in its cycle.
std::string unfilteredBind(const ExtenderContext& context, const BindingArgs& args) {
  if (const auto held = context.state.allocationOf(args.podUid); held && held->node == args.node) {
    return "";
  }
  return context.cycles->bindRefusal(args.podUid, args.podNamespace + "/" + args.podName, args.node,
                                     Clock::now());
}

Gangs gangsOf(const ExtenderContext& context) {
  // With an API, a filter request cannot vouch for its pod: members come from the informer.
  return Gangs{*context.gangMembers, *context.nodeDomains, context.binder,
               context.podsFromApi == nullptr};
}

}  // namespace

std::vector<http::Route> extenderRoutes(const std::string& urlPrefix, ExtenderContext context) {
  std::vector<http::Route> routes;
  routes.push_back(
      {"POST", urlPrefix + "/filter", [context](const http::Request& request) mutable {
         return serve(context, "filter", request, [&](const std::string& body, bool& ok) {
           auto args = parseExtenderArgs(body);
           if (!args) {
             rejectBadRequest(ok, "filter", args.error());
             FilterResult result;
             result.error = args.error().message;
             return json(filterResultJson(result, "", false));
           }
           learnNodes(context, *args);
           context.pods.remember(args->pod);
           if (args->pod.wantsNeuron()) context.bindBacklog->waitForRoom();
           if (std::string wait = resolvePodGroup(context, args->pod); !wait.empty()) {
             FilterResult result;
             result.error = std::move(wait);
             return json(filterResultJson(result, body, args->fullNodes));
           }
           FilterResult result;
           if (isGangMember(args->pod)) {
             result = filterGangMember(context.state, gangsOf(context), args->pod, args->nodeNames);
             rememberFilterAnswer(context, args->pod, result);
           } else {
             result = filterPod(context, args->pod, args->nodeNames);
           }
           TORUS_LOG(Debug, Extender, "filter", {"pod", args->pod.key()},
                     {"count", args->pod.count},
                     {"nodes", static_cast<int>(args->nodeNames.size())},
                     {"passed", static_cast<int>(result.nodeNames.size())});
           return json(filterResultJson(result, body, args->fullNodes));
         });
       }});
  routes.push_back(
      {"POST", urlPrefix + "/prioritize", [context](const http::Request& request) mutable {
         return serve(context, "prioritize", request, [&](const std::string& body, bool& ok) {
           auto args = parseExtenderArgs(body);
           if (!args) {
             // Prioritize has no error field; kube-scheduler ignores a failed prioritize, so say
             // why with a status it logs.
             rejectBadRequest(ok, "prioritize", args.error());
             return http::Response{400, "text/plain", args.error().message + "\n"};
           }
           learnNodes(context, *args);
           context.pods.remember(args->pod);
           resolvePodGroup(context, args->pod);
           if (isGangMember(args->pod)) {
             return json(
                 prioritiesJson(prioritizeGangMember(context.state, args->pod, args->nodeNames)));
           }
           const auto now = Clock::now();
           const HeldCores held = context.cycles->heldForOthers(args->pod.uid, now);
           ExpectedPlacement best;
           auto priorities = prioritize(context.state, args->pod, args->nodeNames, &held, &best);
           if (!best.node.empty()) {
             context.cycles->hold(args->pod.uid, best.node, std::move(best.cores), now);
           }
           return json(prioritiesJson(priorities));
         });
       }});
  routes.push_back(
      {"POST", urlPrefix + "/bind", [context](const http::Request& request) mutable {
         return serve(context, "bind", request, [&](const std::string& body, bool& ok) {
           auto args = parseBindingArgs(body);
           if (!args) {
             rejectBadRequest(ok, "bind", args.error());
             return json(bindingResultJson(args.error().message));
           }
           if (std::string refusal = unfilteredBind(context, *args); !refusal.empty()) {
             ok = false;
             TORUS_LOG(Warn, Extender, "bind refused",
                       {"pod", args->podNamespace + "/" + args->podName}, {"node", args->node},
                       {"error", refusal});
             return json(bindingResultJson(refusal));
           }
           // Whatever happens next, the pod's cycle ends here (a refused pod is scheduled again).
           struct CycleEnd {
             SchedulingCycles& cycles;
             const std::string& uid;
             ~CycleEnd() { cycles.finished(uid); }
           } cycleEnd{*context.cycles, args->podUid};
           auto pod = findPod(context, *args);
           if (!pod) {
             ok = false;
             TORUS_LOG(Warn, Extender, "bind for an unknown pod", {"error", pod.error().message});
             return json(bindingResultJson(pod.error().message));
           }
           if (context.admitBind) {
             if (auto admitted = context.admitBind(*pod, args->node); !admitted) {
               ok = false;
               const std::string refusal = "bind of pod " + pod->key() + " to " + args->node +
                                           " refused: " + admitted.error().message;
               TORUS_LOG(Warn, Extender, "bind refused", {"pod", pod->key()}, {"node", args->node},
                         {"error", refusal});
               return json(bindingResultJson(refusal));
             }
           }
           resolvePodGroup(context, *pod);
           std::optional<int> ultraServerNodes;
           if (isGangMember(*pod) && pod->gang) {
             ultraServerNodes = ultraServerJobNodes(context.state, *context.nodeDomains,
                                                    context.gangMembers->of(pod->gangKey()));
           }
           const BindBacklog::Entry inFlight = context.bindBacklog->enter();
           auto allocation =
               bindPod(context.state, *pod, args->node, context.binder, ultraServerNodes,
                       context.cycles->heldOnNodeForOthers(pod->uid, args->node, Clock::now()));
           if (!allocation) {
             ok = false;
             TORUS_LOG(Warn, Extender, "bind refused", {"pod", pod->key()}, {"node", args->node},
                       {"error", allocation.error().message});
             return json(bindingResultJson(allocation.error().message));
           }
           TORUS_LOG(Info, Extender, "bound", {"pod", pod->key()}, {"node", args->node},
                     {"resource", pod->resourceName}, {"ids", allocation->ids.toRangeString()});
           return json(bindingResultJson(""));
         });
       }});
  routes.push_back(
      {"POST", urlPrefix + "/preempt", [context](const http::Request& request) mutable {
         return serve(context, "preempt", request, [&](const std::string& body, bool& ok) {
           auto args = parsePreemptionArgs(body);
           if (!args) {
             rejectBadRequest(ok, "preempt", args.error());
             return http::Response{400, "text/plain", args.error().message + "\n"};
           }
           context.pods.remember(args->pod);
           resolvePodGroup(context, args->pod);
           if (isGangMember(args->pod)) {
             // Evicting for one member would free room for part of a gang: gangs never preempt.
             return json(preemptionResultJson({}, args->pdbViolationsByNode));
           }
           return json(
               preemptionResultJson(preempt(context.state, args->pod, args->victimUidsByNode),
                                    args->pdbViolationsByNode));
         });
       }});
  routes.push_back({"GET", "/state", [context](const http::Request&) {
                      if (!context.serveState) {
                        return http::Response{404, "text/plain; charset=utf-8",
                                              "GET /state is off: it lists every Neuron pod to "
                                              "whoever reaches this port; start the extender "
                                              "with --serve-state to turn it on\n"};
                      }
                      return json(clusterStateJson(context.state));
                    }});
  for (http::Route& route : healthRoutes(context))
    routes.push_back(std::move(route));
  return routes;
}

std::vector<http::Route> healthRoutes(ExtenderContext context) {
  std::vector<http::Route> routes;
  routes.push_back({"GET", "/healthz", [](const http::Request&) {
                      return http::Response{200, "text/plain; charset=utf-8", "ok\n"};
                    }});
  routes.push_back({"GET", "/readyz", [context](const http::Request&) {
                      if (context.ready && !context.ready()) {
                        return http::Response{503, "text/plain; charset=utf-8",
                                              "not ready: nodes and pods not listed yet\n"};
                      }
                      return http::Response{200, "text/plain; charset=utf-8", "ok\n"};
                    }});
  routes.push_back({"GET", "/metrics", [context](const http::Request&) {
                      std::string text = context.metrics.prometheusText();
                      text +=
                          "# HELP torus_extender_unfiltered_binds_refused_total Binds refused "
                          "because this extender's filter had not passed the pod on that node "
                          "in its scheduling cycle.\n"
                          "# TYPE torus_extender_unfiltered_binds_refused_total counter\n"
                          "torus_extender_unfiltered_binds_refused_total " +
                          std::to_string(context.cycles->unfilteredBindsRefused()) + "\n";
                      text +=
                          "# HELP torus_extender_filter_backlog_waits_total Filters that waited "
                          "because as many binds as the API connections kept were in flight.\n"
                          "# TYPE torus_extender_filter_backlog_waits_total counter\n"
                          "torus_extender_filter_backlog_waits_total " +
                          std::to_string(context.bindBacklog->waits()) +
                          "\n"
                          "# HELP torus_extender_filter_backlog_wait_seconds_total Time those "
                          "filters waited.\n"
                          "# TYPE torus_extender_filter_backlog_wait_seconds_total counter\n"
                          "torus_extender_filter_backlog_wait_seconds_total " +
                          std::to_string(context.bindBacklog->secondsWaited()) + "\n";
                      if (context.moreMetrics) text += context.moreMetrics();
                      return http::Response{200, "text/plain; version=0.0.4", std::move(text)};
                    }});
  return routes;
}

}  // namespace torus::extender
