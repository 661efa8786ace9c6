// The node agent's HTTP surface: /healthz, /metrics (the driver's counters read on scrape, within
// a deadline), /allocations, GET /deep-check on the metrics address, and POST /deep-check on the
// loopback admin address. The agent's start-up and wiring are in node_agent.cc.
#include <chrono>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/version.h"
#include "common/metrics/event_counters.h"
#include "common/metrics/latency_histograms.h"
#include "node-runtime/agent/core_tenancy.h"
#include "node-runtime/agent/node_agent.h"
#include "node-runtime/health/deep_check/deep_check_report.h"
#include "node-runtime/metrics/agent_metrics.h"
#include "node-runtime/metrics/deep_check_metrics.h"

namespace torus::agent {

nlohmann::json NodeAgent::allocations() const {
  std::vector<PluginHolder> holders;
  if (plugins_) {
    const topology::Node node = monitor_->node();
    for (const plugin::Holder& holder : plugins_->assignments().holders) {
      const topology::CoreSet cores = plugin::coresOfIds(holder.kind, node, holder.ids);
      holders.push_back({holder.pod, holder.container,
                         std::string(plugin::resourceName(holder.kind)), holder.ids, cores,
                         node.devicesOfCores(cores)});
    }
  }
  std::vector<PreparedClaimView> claims;
  if (dra_) {
    const std::vector<dra::ClaimHolder> users =
        claimHolders_ ? claimHolders_->holders() : std::vector<dra::ClaimHolder>{};
    for (const auto& [uid, claim] : dra_->claims().prepared()) {
      PreparedClaimView view{claim.ref.nameSpace + "/" + claim.ref.name,
                             uid,
                             std::string(dra::kDriverName),
                             {},
                             claim.cores,
                             claim.chips,
                             claim.lnc,
                             {}};
      for (const dra::AllocatedDevice& device : claim.devices)
        view.deviceNames.push_back(device.name);
      // The containers kubelet's pod-resources lists as using the claim.
      for (const dra::ClaimHolder& user : users) {
        if (usesClaim(user, claim.ref))
          view.containers.push_back({user.podNamespace + "/" + user.pod, user.container});
      }
      claims.push_back(std::move(view));
    }
  }
  return allocationsDocument(holders, claims);
}

std::string NodeAgent::metricsText() {
  const topology::Node node = monitor_->node();
  const metrics::NodeStats stats = readStatsBounded(node);
  return metrics::renderAgentMetrics(node, stats, coreTenants(node), metrics::processCounters(),
                                     metrics::processHistograms()) +
         metrics::renderDeepCheckMetrics(deepCheck_->last()) +
         renderGrantMetrics(grants_, deniedGrants_);
}

http::Response NodeAgent::debugResponse(const http::Request& request) {
  const auto error = [](int status, const std::string& message) {
    return http::Response{status, "application/json",
                          nlohmann::json{{"error", message}}.dump() + "\n"};
  };
  DebugReportInput input;
  if (const auto it = request.query.find("device"); it != request.query.end()) {
    const auto device = parseInt(it->second, 0, 1 << 16);
    if (!device) return error(400, "device=" + it->second + ": " + device.error().message);
    input.device = *device;
  }
  input.agentVersion = std::string(versionString());
  input.nodeName = nodeName_;
  input.node = monitor_->node();
  input.kernelLogSource = kernelLog_ ? kernelLog_->source() : "";
  input.kernelLogLost = kernelLogError_;
  input.kernelLines = kernelLines_.lines();
  input.stalledReads = monitor_->stalledReads();
  input.awaitingRecovery = monitor_->awaitingRecovery();
  input.pendingLnc = monitor_->pendingLnc();
  input.allocations = allocations();
  input.metrics = metricsText();
  {
    // A hung driver attribute must not hold the admin address: read on a worker, bounded.
    std::lock_guard lock(debugMutex_);
    auto files = std::make_shared<std::vector<nlohmann::json>>();
    const bool read = debugWorker_.run(
        [files, roots = prepared_.roots, node = input.node, only = input.device] {
          for (const topology::Device& device : node.devices) {
            files->push_back(!only || *only == device.index ? driverFilesOf(roots, device)
                                                            : nlohmann::json(nullptr));
          }
        },
        kDebugReadDeadline);
    if (read) {
      input.driverFiles = std::move(*files);
    } else {
      const nlohmann::json hung = {{"error", "reading the driver's files did not finish within " +
                                                 std::to_string(kDebugReadDeadline.count()) +
                                                 " s (a hung attribute? see stalledReads)"}};
      input.driverFiles.assign(input.node.devices.size(), hung);
    }
  }
  auto report = debugReport(input);
  if (!report) return error(404, report.error().message);
  return http::Response{200, "application/json", report->dump(2) + "\n"};
}

metrics::NodeStats NodeAgent::readStatsBounded(const topology::Node& node) {
  // One scrape reads at a time (a second waits at most a deadline); a read that hangs leaves this
  // scrape, and the next ones until it returns, without the driver's counters but answered.
  std::lock_guard lock(statsMutex_);
  auto stats = std::make_shared<metrics::NodeStats>();
  const bool read = statsWorker_.run(
      [stats, roots = prepared_.roots, node] { *stats = metrics::readNodeStats(roots, node); },
      kStatsDeadline);
  if (read) return std::move(*stats);
  metrics::NodeStats partial;
  const auto since = statsWorker_.stuckSince();
  const long long seconds =
      since
          ? std::chrono::duration_cast<std::chrono::seconds>(DeadlineWorker::Clock::now() - *since)
                .count()
          : 0;
  partial.problems.push_back("a read of the driver's counters has not returned for " +
                             std::to_string(seconds) + " s");
  TORUS_LOG(Warn, Agent, "/metrics without the driver's counters: a read of them hangs",
            {"stuck_s", seconds});
  return partial;
}

Result<void> NodeAgent::serveAdmin(const std::string& address) {
  auto listen = http::parseListenAddress(address);
  if (!listen) return std::move(listen).error();
  std::vector<http::Route> routes;
  // The deep health check now: joins a run in progress rather than starting another, and answers
  // with the result.
  routes.push_back({"POST", "/deep-check", [this](const http::Request&) {
                      return http::Response{200, "application/json",
                                            health::deepCheckJson(deepCheck_->runNow())};
                    }});
  // Evidence for `kubectl neuron debug` (through pods/exec, which Kubernetes authorizes): the
  // device's driver files and kernel log lines are the node's, not for the metrics port.
  routes.push_back(
      {"GET", "/debug", [this](const http::Request& request) { return debugResponse(request); }});
  http::ServerOptions options;
  options.address = *listen;
  options.maxBodyBytes = 64 * 1024;
  options.maxConnections = 16;
  auto server = http::HttpServer::start(options, std::move(routes));
  if (!server) return std::move(server).error();
  admin_ = std::move(*server);
  TORUS_LOG(Info, Agent, "serving admin HTTP", {"address", listen->host}, {"port", admin_->port()},
            {"paths", "POST /deep-check, GET /debug"});
  return okResult();
}

Result<void> NodeAgent::serveHttp(const std::string& address) {
  auto listen = http::parseListenAddress(address);
  if (!listen) return std::move(listen).error();
  std::vector<http::Route> routes;
  // Alive and answering. A hung read of the driver's files is named here (its device is out of
  // service already); it is no reason to restart the agent, which could not interrupt it either.
  routes.push_back({"GET", "/healthz", [this](const http::Request&) {
                      std::string body = "ok\n";
                      for (const std::string& stall : monitor_->stalledReads())
                        body += "stalled read: " + stall + "\n";
                      return http::Response{200, "text/plain; charset=utf-8", body};
                    }});
  // Ready: kubelet can reach what this agent serves it. Under DRA that is the driver's sockets
  // and kubelet's registration of them; a pod that is not ready says why here.
  // Ready also means permitted: a grant denied at start (a security module, a dropped
  // capability) is named here with its fix, since the agent would fail the first pod it serves.
  routes.push_back({"GET", "/readyz", [this](const http::Request&) {
                      std::string reason = dra_ ? dra_->notReadyReason() : "";
                      if (!deniedGrants_.empty()) {
                        reason += (reason.empty() ? "" : "; ") + std::string("denied: ") +
                                  describeDenied(deniedGrants_);
                      }
                      return reason.empty()
                                 ? http::Response{200, "text/plain; charset=utf-8", "ready\n"}
                                 : http::Response{503, "text/plain; charset=utf-8",
                                                  "not ready: " + reason + "\n"};
                    }});
  // Who holds which cores, recovered from kubelet's pod-resources after any agent restart.
  routes.push_back({"GET", "/allocations", [this](const http::Request&) {
                      return http::Response{200, "application/json", allocations().dump() + "\n"};
                    }});
  // Collected on scrape: the driver's counters are read when Prometheus asks, never in between.
  routes.push_back(
      {"GET", "/metrics", [this](const http::Request&) {
         return http::Response{200, "text/plain; version=0.0.4; charset=utf-8", metricsText()};
       }});
  // Running a check writes device memory and costs seconds of CPU: not for whoever reaches the
  // metrics port. It is on the admin address; this says where.
  routes.push_back({"POST", "/deep-check", [](const http::Request&) {
                      return http::Response{
                          403, "application/json",
                          "{\"error\": \"POST /deep-check is served on the agent's admin address "
                          "(--admin-addr, 127.0.0.1:9401 by default), from inside its pod: kubectl "
                          "port-forward -n NAMESPACE POD 9401, then curl -X POST "
                          "127.0.0.1:9401/deep-check\"}\n"};
                    }});
  // The last result, for anyone who may read the metrics.
  routes.push_back(
      {"GET", "/deep-check", [this](const http::Request&) {
         const auto last = deepCheck_->last();
         if (!last) {
           return http::Response{404, "application/json",
                                 "{\"error\": \"no deep check has run yet; POST "
                                 "/deep-check runs one\"}\n"};
         }
         return http::Response{200, "application/json", health::deepCheckJson(last->result)};
       }});
  http::ServerOptions options;
  options.address = *listen;
  auto server = http::HttpServer::start(options, std::move(routes));
  if (!server) return std::move(server).error();
  http_ = std::move(*server);
  TORUS_LOG(Info, Agent, "serving HTTP", {"address", listen->host}, {"port", http_->port()},
            {"paths", "/healthz /readyz /metrics /allocations /deep-check"});
  return okResult();
}

}  // namespace torus::agent
