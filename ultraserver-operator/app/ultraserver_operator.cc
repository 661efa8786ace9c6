#include "ultraserver-operator/app/ultraserver_operator.h"

#include <algorithm>
#include <set>

#include "common/base/log.h"
#include "common/base/strings.h"
#include "common/base/utc_time.h"
#include "common/contracts/neuron_ultraserver.h"
#include "common/contracts/ultraserver_labels.h"
#include "common/kube/kube_config.h"
#include "common/kube/object_fields.h"
#include "common/metrics/prometheus_text.h"

namespace torus::ultraserver {
namespace {

using json = nlohmann::json;
using kube::fieldAt;
using kube::stringAt;

constexpr auto kDebounce = std::chrono::milliseconds(200);

// What the model reads of a Node (model/ultraserver_model.h memberOf): name, labels, cordon, the
// Ready condition.
std::shared_ptr<const json> slimNode(const std::shared_ptr<const json>& node) {
  json slim = {{"metadata",
                {{"name", fieldAt(*node, {"metadata", "name"})},
                 {"labels", fieldAt(*node, {"metadata", "labels"})}}},
               {"spec", {{"unschedulable", fieldAt(*node, {"spec", "unschedulable"})}}},
               {"status", {{"conditions", json::array()}}}};
  for (const json& condition : kube::arrayAt(*node, {"status", "conditions"})) {
    if (stringAt(condition, {"type"}) == "Ready") slim["status"]["conditions"].push_back(condition);
  }
  return std::make_shared<const json>(std::move(slim));
}

std::string keyOf(const json& object) {
  const std::string nameSpace = stringAt(object, {"metadata", "namespace"});
  const std::string name = stringAt(object, {"metadata", "name"});
  return nameSpace.empty() ? name : nameSpace + "/" + name;
}

}  // namespace

Result<std::unique_ptr<UltraServerOperator>> UltraServerOperator::start(
    const OperatorConfig& config) {
  auto kube = config.kubeconfig.empty()
                  ? kube::inClusterConfig()
                  : kube::loadKubeconfig(config.kubeconfig, config.kubeContext);
  if (!kube) return std::move(kube).error().withContext("reaching the Kubernetes API");
  auto self = std::make_unique<UltraServerOperator>(config, *kube);
  UltraServerOperator* raw = self.get();

  http::ServerOptions healthOptions;
  healthOptions.address = *http::parseListenAddress(config.healthProbeBindAddress);
  auto health = http::HttpServer::start(
      healthOptions, {{"GET", "/healthz",
                       [](const http::Request&) {
                         return http::Response{200, "text/plain", "ok\n"};
                       }},
                      {"GET", "/readyz", [raw](const http::Request&) {
                         return raw->synced()
                                    ? http::Response{200, "text/plain", "ok\n"}
                                    : http::Response{503, "text/plain", "caches not synced yet\n"};
                       }}});
  if (!health) return std::move(health).error().withContext("--health-probe-bind-address");
  self->health_ = std::move(*health);
  http::ServerOptions metricsOptions;
  metricsOptions.address = *http::parseListenAddress(config.metricsBindAddress);
  auto metrics = http::HttpServer::start(
      metricsOptions, {{"GET", "/metrics", [raw](const http::Request&) {
                          return http::Response{200, "text/plain; version=0.0.4; charset=utf-8",
                                                raw->metricsText()};
                        }}});
  if (!metrics) return std::move(metrics).error().withContext("--metrics-bind-address");
  self->metrics_ = std::move(*metrics);

  // Only the nodes of an UltraServer (the agents' server-id label), and of those only what the
  // model reads: a Node's images and volumes would fill the cache on a large cluster.
  self->nodeInformer_ = std::make_unique<kube::Informer>(
      *kube, "/api/v1/nodes?labelSelector=" + percentEncoded(contracts::kUltraServerIdLabel),
      cacheHandlers(raw, &raw->nodes_, slimNode));
  self->workloadInformer_ = std::make_unique<kube::Informer>(*kube, contracts::workloadsPath(),
                                                             cacheHandlers(raw, &raw->workloads_));
  self->ultraServerInformer_ =
      std::make_unique<kube::Informer>(*kube, contracts::ultraServersPath(config.nameSpace),
                                       cacheHandlers(raw, &raw->ultraServers_));
  self->claimInformer_ = std::make_unique<kube::Informer>(
      *kube, "/apis/resource.k8s.io/v1/resourceclaims", cacheHandlers(raw, &raw->claims_));

  if (config.leaderElect) {
    kube::LeaseOptions lease;
    lease.nameSpace = config.nameSpace;
    lease.name = "neuron-ultraserver-operator";
    lease.identity = kube::leaseIdentity();
    self->lease_ =
        std::make_unique<kube::LeaderLease>(*kube, lease,
                                            kube::LeaseCallbacks{[raw] { raw->markDirty(); },
                                                                 [raw] {
                                                                   raw->lostLease_.store(true);
                                                                   raw->markDirty();
                                                                 }});
    self->lease_->start();
  }
  self->worker_ = std::jthread([raw](std::stop_token stop) { raw->run(stop); });
  return self;
}

UltraServerOperator::UltraServerOperator(const OperatorConfig& config, kube::KubeConfig kube)
    : config_(config),
      api_(std::move(kube), config.nameSpace, std::chrono::seconds(config.resyncSeconds),
           [this] { return !lostLease_.load() && (!lease_ || lease_->isLeader()); }) {}

UltraServerOperator::~UltraServerOperator() {
  stop();
}

void UltraServerOperator::stop() {
  if (worker_.joinable()) {
    worker_.request_stop();
    wake_.notify_all();
    worker_.join();
  }
  if (lease_) lease_->stop();  // releases the lease: a standby takes over at once
  nodeInformer_.reset();
  workloadInformer_.reset();
  ultraServerInformer_.reset();
  claimInformer_.reset();
  if (health_) health_->stop();
  if (metrics_) metrics_->stop();
}

kube::InformerHandlers UltraServerOperator::cacheHandlers(UltraServerOperator* self, Cache* cache,
                                                          Slim slim) {
  kube::InformerHandlers handlers;
  handlers.onList = [self, cache, slim](const std::vector<std::shared_ptr<const json>>& items) {
    {
      std::lock_guard lock(self->mutex_);
      cache->clear();
      for (const auto& item : items)
        (*cache)[keyOf(*item)] = slim ? slim(item) : item;
    }
    self->markDirty();
  };
  handlers.onEvent = [self, cache, slim](const kube::WatchEvent& event) {
    if (!event.object || event.type == "BOOKMARK") return;
    {
      std::lock_guard lock(self->mutex_);
      if (event.type == "DELETED") {
        cache->erase(keyOf(*event.object));
      } else {
        (*cache)[keyOf(*event.object)] = slim ? slim(event.object) : event.object;
      }
    }
    self->markDirty();
  };
  return handlers;
}

void UltraServerOperator::markDirty() {
  {
    std::lock_guard lock(mutex_);
    dirty_ = true;
  }
  wake_.notify_all();
}

bool UltraServerOperator::synced() const {
  return nodeInformer_ && nodeInformer_->hasSynced() && workloadInformer_->hasSynced() &&
         ultraServerInformer_->hasSynced() && claimInformer_->hasSynced();
}

void UltraServerOperator::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mutex_);
      std::chrono::seconds wait(config_.resyncSeconds);
      if (recheckIn_) wait = std::min(wait, *recheckIn_ + std::chrono::seconds(1));
      wake_.wait_for(lock, stop, wait, [this] { return dirty_; });
      if (stop.stop_requested()) return;
    }
    // Let a burst of watch events (our own writes among them) settle into one pass.
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, stop, kDebounce, [] { return false; });
      dirty_ = false;
    }
    if (stop.stop_requested() || lostLease_.load()) return;
    if (lease_ && !lease_->isLeader()) continue;
    if (!synced()) continue;
    ++passes_;
    if (auto done = reconcileOnce(); !done) {
      ++failedPasses_;
      // 1 s, doubling while passes keep failing, up to 30 s: an error that does not clear (a
      // quota) costs the API server a request a few times a minute, not every second.
      const std::chrono::seconds retry(std::min(1L << std::min(failedInARow_++, 5), 30L));
      TORUS_LOG(Warn, UltraServer, "reconcile pass failed; retrying",
                {"error", done.error().message},
                {"retry_s", static_cast<std::int64_t>(retry.count())});
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, stop, retry, [] { return false; });
      dirty_ = true;
    } else {
      failedInARow_ = 0;
    }
  }
}

namespace {

// API errors of single workloads in one pass: each is logged where it happens and the pass goes
// on with the others (one namespace's quota must not stop every workload's status); the pass
// still ends failed, so it is retried.
class WorkloadFailures {
 public:
  void add(const std::string& workload, const Error& error) {
    TORUS_LOG(Warn, UltraServer, "API error for one workload; the others go on",
              {"workload", workload}, {"error", error.message});
    if (first_.empty()) first_ = workload + ": " + error.message;
    ++count_;
  }
  Result<void> result() const {
    if (count_ == 0) return {};
    return makeError(
        ErrorCode::kUnavailable,
        std::to_string(count_) + " workload API error(s) this pass; the first: " + first_);
  }

 private:
  int count_ = 0;
  std::string first_;
};

}  // namespace

// One reconcile pass: the objects as the informers held them at its start, what was read and
// decided on the way, and the API errors of single workloads.
struct UltraServerOperator::Pass {
  Cache workloadObjects;
  Cache stored;  // NeuronUltraServers
  Cache claims;
  std::vector<UltraServer> servers;
  std::vector<Workload> workloads;
  std::map<std::string, OperatorApi::WorkloadPods> listedPods;  // by workload ref, once a pass
  // What a workload's template says before anything is reserved for it: one it cannot own (a
  // clash) makes it hold nothing; one the API refuses (a quota) is reported on it.
  std::map<std::string, WorkloadOutcome> templateOutcomes;
  WorkloadFailures failures;
};

namespace {

// The UltraServers the nodes' labels describe, each node marked busy where a claim of no
// workload holds its devices.
std::vector<UltraServer> serversOf(const OperatorApi::Cache& nodes,
                                   const OperatorApi::Cache& claims) {
  const std::map<std::string, BusyNode> busy = nodesBusyWithClaims(claims);
  std::vector<MemberNode> members;
  for (const auto& [name, node] : nodes) {
    auto member = memberOf(*node);
    if (!member) continue;
    if (const auto claim = busy.find(member->name); claim != busy.end()) {
      member->busyWith = claim->second.claim;
      member->busyBeforeTaint = claim->second.beforeTaint;
    }
    members.push_back(std::move(*member));
  }
  return groupUltraServers(std::move(members));
}

}  // namespace

Result<void> UltraServerOperator::reconcileOnce() {
  Pass pass;
  Cache nodes;
  {
    std::lock_guard lock(mutex_);
    nodes = nodes_;
    pass.workloadObjects = workloads_;
    pass.stored = ultraServers_;
    pass.claims = claims_;
  }
  pass.servers = serversOf(nodes, pass.claims);
  for (const auto& [key, object] : pass.workloadObjects) {
    if (auto workload = readWorkload(*object, pass)) pass.workloads.push_back(std::move(*workload));
  }
  std::vector<Allocation> current;
  for (const auto& [name, object] : pass.stored) {
    for (Allocation& allocation : allocationsOf(*object))
      current.push_back(std::move(allocation));
  }

  AllocationPlan plan = planAllocations(pass.servers, pass.workloads, current, utcNowRfc3339(),
                                        std::chrono::seconds(config_.failureGraceSeconds));
  // A grace period that ends while nothing changes still needs a pass at its end.
  recheckIn_ = plan.recheckIn;
  completeOutcomes(pass, plan);

  // Pods first: a pod that must move is gone before its nodes are handed to anyone else.
  evictPods(pass, plan);
  if (auto done = api_.writeUltraServers(pass.servers, plan.allocations, pass.stored); !done)
    return std::move(done).error();
  writeWorkloads(pass, plan);
  return pass.failures.result();
}

std::optional<Workload> UltraServerOperator::readWorkload(const json& object, Pass& pass) {
  Workload workload = parseWorkload(object);
  if (workload.deleting && !hasFinalizer(object)) return std::nullopt;  // not ours to hold back
  if (workload.invalid.empty() && !workload.deleting) {
    WorkloadOutcome& outcome = pass.templateOutcomes[workload.ref()];
    if (auto done = api_.ensureClaimTemplate(workload, outcome); !done) {
      // Said on the workload itself, which keeps what it was given; the others go on.
      outcome.degraded = true;
      outcome.degradedReason = "ClaimTemplateNotWritten";
      outcome.degradedMessage = done.error().message;
      pass.failures.add(workload.ref(), done.error());
    } else if (outcome.state == WorkloadState::kFailed) {
      workload.invalid = outcome.message;
    }
  }
  if (workload.deleting && workload.invalid.empty()) {
    // The template goes first, so no new claim is made from it; then the pods that own the
    // workload's claims are evicted, and the UltraServers are held until they are gone.
    auto pods = [&]() -> Result<OperatorApi::WorkloadPods> {
      if (auto done = api_.deleteClaimTemplate(workload); !done) return std::move(done).error();
      return api_.podsOf(workload, podsOfWorkload(pass.claims, workload));
    }();
    if (pods) {
      workload.podsRemain = !pods->mine.empty();
      pass.listedPods[workload.ref()] = std::move(*pods);
    } else {
      // Its finalizer stays until its pods can be seen gone; the other workloads go on.
      workload.podsRemain = true;
      pass.failures.add(workload.ref(), pods.error());
    }
  }
  return workload;
}

void UltraServerOperator::completeOutcomes(Pass& pass, AllocationPlan& plan) {
  for (auto& [ref, outcome] : pass.templateOutcomes) {
    WorkloadOutcome& planned = plan.outcomes[ref];
    if (outcome.state == WorkloadState::kFailed) {
      planned.reason = outcome.reason;  // the planner saw it invalid; say why
    } else if (outcome.degraded && !planned.degraded) {
      planned.degraded = true;
      planned.degradedReason = outcome.degradedReason;
      planned.degradedMessage = outcome.degradedMessage;
    }
  }
  for (const Workload& workload : pass.workloads) {
    if (workload.deleting && workload.podsRemain) {
      reportPodsNotGone(workload, *pass.workloadObjects.at(workload.ref()), pass.listedPods,
                        plan.outcomes[workload.ref()]);
    }
  }
}

void UltraServerOperator::evictPods(Pass& pass, AllocationPlan& plan) {
  for (const Workload& workload : pass.workloads) {
    const WorkloadOutcome& outcome = plan.outcomes[workload.ref()];
    if (!outcome.restartAllPods && outcome.restartPodsOn.empty()) continue;
    auto listed = pass.listedPods.find(workload.ref());
    if (listed == pass.listedPods.end()) {
      auto pods = api_.podsOf(workload, podsOfWorkload(pass.claims, workload));
      if (!pods) {
        pass.failures.add(workload.ref(), pods.error());
        continue;
      }
      listed = pass.listedPods.emplace(workload.ref(), std::move(*pods)).first;
    }
    if (auto done = api_.evictPods(workload, outcome, listed->second.mine); !done) {
      pass.failures.add(workload.ref(), done.error());
    }
  }
}

void UltraServerOperator::writeWorkloads(Pass& pass, AllocationPlan& plan) {
  int allocated = 0;
  int waiting = 0;
  for (const Workload& workload : pass.workloads) {
    WorkloadOutcome& outcome = plan.outcomes[workload.ref()];
    const bool released = std::none_of(
        plan.allocations.begin(), plan.allocations.end(),
        [&](const Allocation& allocation) { return allocation.workloadRef == workload.ref(); });
    if (workload.deleting && released && !workload.podsRemain)
      reportRecreators(workload, pass.listedPods);
    if (auto done = api_.writeWorkload(workload, outcome, *pass.workloadObjects.at(workload.ref()),
                                       released);
        !done) {
      pass.failures.add(workload.ref(), done.error());
    }
    allocated += outcome.state == WorkloadState::kAllocated;
    waiting += outcome.state == WorkloadState::kPending ||
               outcome.state == WorkloadState::kPartiallyAllocated;
  }
  workloadsAllocated_.store(allocated);
  workloadsWaiting_.store(waiting);
}

void UltraServerOperator::reportPodsNotGone(
    const Workload& workload, const json& object,
    const std::map<std::string, OperatorApi::WorkloadPods>& listed, WorkloadOutcome& outcome) {
  const auto since = parseUtcRfc3339(stringAt(object, {"metadata", "deletionTimestamp"}));
  const auto found = listed.find(workload.ref());
  if (!since || found == listed.end() || found->second.mine.empty()) return;
  const auto waited =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - *since);
  const std::chrono::seconds bound(config_.failureGraceSeconds);
  if (waited < bound) {
    recheckIn_ = std::min(recheckIn_.value_or(bound - waited), bound - waited);
    return;
  }
  std::string pods;
  for (const json& pod : found->second.mine) {
    const std::string controller = api_.controllerOf(pod);
    pods += (pods.empty() ? "" : ", ") + stringAt(pod, {"metadata", "name"}) + " on " +
            stringAt(pod, {"spec", "nodeName"}) +
            (controller.empty() ? "" : " (" + controller + ")");
  }
  // Said once (an Event when the reason first appears); the UltraServers stay held, since the
  // pods' claims still hold their chips.
  outcome.degraded = true;
  outcome.degradedReason = "PodsNotGone";
  outcome.degradedMessage = "deleted " + std::to_string(waited.count()) +
                            " s ago, its pods are not gone: " + pods +
                            "; its UltraServers stay held until they are (a pod on a node that "
                            "is down ends when the node returns or is deleted)";
}

void UltraServerOperator::reportRecreators(
    const Workload& workload, const std::map<std::string, OperatorApi::WorkloadPods>& listed) {
  const auto found = listed.find(workload.ref());
  if (found == listed.end() || found->second.claimless.empty()) return;
  std::set<std::string> controllers;
  for (const json& pod : found->second.claimless) {
    const std::string controller = api_.controllerOf(pod);
    controllers.insert(controller.empty() ? "pod " + stringAt(pod, {"metadata", "name"})
                                          : controller);
  }
  std::string names;
  for (const std::string& controller : controllers)
    names += (names.empty() ? "" : ", ") + controller;
  api_.warn(workload, "PodsStillCreated",
            names + " keeps creating pods that use ResourceClaimTemplate " +
                workload.claimTemplate +
                ", deleted with the workload: they stay Pending; scale it to zero or delete it");
}

std::string UltraServerOperator::metricsText() const {
  metrics::PrometheusText out;
  out.family("torus_ultraserver_reconcile_passes_total", "counter",
             "Reconcile passes run while leading");
  out.sample("torus_ultraserver_reconcile_passes_total", {}, static_cast<double>(passes_.load()));
  out.family("torus_ultraserver_reconcile_failures_total", "counter",
             "Reconcile passes that stopped at an API error (the next pass retries)");
  out.sample("torus_ultraserver_reconcile_failures_total", {},
             static_cast<double>(failedPasses_.load()));
  out.family("torus_ultraserver_pods_evicted_total", "counter",
             "Pods evicted by a failure strategy or a workload's deletion");
  out.sample("torus_ultraserver_pods_evicted_total", {}, static_cast<double>(api_.podsEvicted()));
  out.family("torus_ultraserver_workloads", "gauge", "Workloads by state after the last pass");
  out.sample("torus_ultraserver_workloads", {{"state", "Allocated"}}, workloadsAllocated_.load());
  out.sample("torus_ultraserver_workloads", {{"state", "Waiting"}}, workloadsWaiting_.load());
  out.family("torus_ultraserver_leader", "gauge", "1 while this replica holds the lease");
  out.sample("torus_ultraserver_leader", {}, !lease_ || lease_->isLeader() ? 1 : 0);
  return out.text();
}

}  // namespace torus::ultraserver
