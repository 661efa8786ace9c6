#include "scheduler-extender/server/http_routes.h"

#include <chrono>
#include <optional>

#include "common/base/log.h"
#include "common/metrics/prometheus_text.h"
#include "scheduler-extender/server/extender_json.h"
#include "scheduler-extender/server/state_json.h"
#include "scheduler-extender/verbs/scheduling_cycle.h"

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

std::vector<NodeSeen> nodesSeen(const ExtenderArgs& args) {
  std::vector<NodeSeen> seen;
  if (!args.fullNodes) return seen;
  for (const NodeInfo& node : args.nodes)
    seen.push_back({node.name, node.instanceType});
  return seen;
}

SchedulingCycle::Ports portsOf(const ExtenderContext& context) {
  return SchedulingCycle::Ports{.state = context.state,
                                .pods = context.pods,
                                .podsFromApi = context.podsFromApi,
                                .binder = context.binder,
                                .cycles = context.cycles,
                                .backlog = context.bindBacklog,
                                .admitBind = context.admitBind,
                                .gangMembers = context.gangMembers,
                                .nodeDomains = context.nodeDomains,
                                .podGroups = context.podGroups,
                                .learnNodesFromRequests = context.learnNodesFromRequests,
                                .chooseInFilter = context.chooseInFilter};
}

}  // namespace

std::vector<http::Route> extenderRoutes(const std::string& urlPrefix, ExtenderContext context) {
  auto cycle = std::make_shared<SchedulingCycle>(portsOf(context));
  std::vector<http::Route> routes;
  routes.push_back(
      {"POST", urlPrefix + "/filter", [context, cycle](const http::Request& request) {
         return serve(context, "filter", request, [&](const std::string& body, bool& ok) {
           auto args = parseExtenderArgs(body);
           if (!args) {
             rejectBadRequest(ok, "filter", args.error());
             FilterResult result;
             result.error = args.error().message;
             return json(filterResultJson(result, "", false));
           }
           const FilterResult result = cycle->filter(args->pod, args->nodeNames, nodesSeen(*args));
           return json(filterResultJson(result, body, args->fullNodes));
         });
       }});
  routes.push_back(
      {"POST", urlPrefix + "/prioritize", [context, cycle](const http::Request& request) {
         return serve(context, "prioritize", request, [&](const std::string& body, bool& ok) {
           auto args = parseExtenderArgs(body);
           if (!args) {
             // Prioritize has no error field; kube-scheduler ignores a failed prioritize, so say
             // why with a status it logs.
             rejectBadRequest(ok, "prioritize", args.error());
             return http::Response{400, "text/plain", args.error().message + "\n"};
           }
           return json(
               prioritiesJson(cycle->prioritize(args->pod, args->nodeNames, nodesSeen(*args))));
         });
       }});
  routes.push_back(
      {"POST", urlPrefix + "/bind", [context, cycle](const http::Request& request) {
         return serve(context, "bind", request, [&](const std::string& body, bool& ok) {
           auto args = parseBindingArgs(body);
           if (!args) {
             rejectBadRequest(ok, "bind", args.error());
             return json(bindingResultJson(args.error().message));
           }
           const std::string refusal =
               cycle->bind({args->podName, args->podNamespace, args->podUid, args->node});
           ok = refusal.empty();
           return json(bindingResultJson(refusal));
         });
       }});
  routes.push_back(
      {"POST", urlPrefix + "/preempt", [context, cycle](const http::Request& request) {
         return serve(context, "preempt", request, [&](const std::string& body, bool& ok) {
           auto args = parsePreemptionArgs(body);
           if (!args) {
             rejectBadRequest(ok, "preempt", args.error());
             return http::Response{400, "text/plain", args.error().message + "\n"};
           }
           return json(preemptionResultJson(cycle->preempt(args->pod, args->victimUidsByNode),
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
                      metrics::PrometheusText cycle;
                      cycle.family("torus_extender_unfiltered_binds_refused_total", "counter",
                                   "Binds refused because this extender's filter had not passed "
                                   "the pod on that node in its scheduling cycle.");
                      cycle.sample("torus_extender_unfiltered_binds_refused_total", {},
                                   static_cast<double>(context.cycles->unfilteredBindsRefused()));
                      cycle.family("torus_extender_filter_backlog_waits_total", "counter",
                                   "Filters that waited because as many binds as the API "
                                   "connections kept were in flight.");
                      cycle.sample("torus_extender_filter_backlog_waits_total", {},
                                   static_cast<double>(context.bindBacklog->waits()));
                      cycle.family("torus_extender_filter_backlog_wait_seconds_total", "counter",
                                   "Time those filters waited.");
                      cycle.sample("torus_extender_filter_backlog_wait_seconds_total", {},
                                   context.bindBacklog->secondsWaited());
                      std::string text = context.metrics.prometheusText() + cycle.text();
                      if (context.moreMetrics) text += context.moreMetrics();
                      return http::Response{200, "text/plain; version=0.0.4", std::move(text)};
                    }});
  return routes;
}

}  // namespace torus::extender
