#include "ultraserver-operator/app/ultraserver_operator.h"

#include <algorithm>
#include <set>

#include "common/base/log.h"
#include "common/base/utc_time.h"
#include "common/kube/event_object.h"
#include "common/kube/kube_config.h"
#include "common/kube/object_fields.h"
#include "common/metrics/prometheus_text.h"
#include "ultraserver-operator/kube/operator_objects.h"

namespace torus::ultraserver {
namespace {

using json = nlohmann::json;
using kube::fieldAt;
using kube::stringAt;

constexpr auto kDebounce = std::chrono::milliseconds(200);

std::string keyOf(const json& object) {
  const std::string nameSpace = stringAt(object, {"metadata", "namespace"});
  const std::string name = stringAt(object, {"metadata", "name"});
  return nameSpace.empty() ? name : nameSpace + "/" + name;
}

bool hasFinalizer(const json& object) {
  const json& finalizers = fieldAt(object, {"metadata", "finalizers"});
  return finalizers.is_array() &&
         std::find(finalizers.begin(), finalizers.end(), json(kFinalizer)) != finalizers.end();
}

// A pod made from the workload's claim template (the pods a workload owns, whatever made them).
bool usesTemplate(const json& pod, const std::string& claimTemplate) {
  const json& claims = fieldAt(pod, {"spec", "resourceClaims"});
  if (!claims.is_array()) return false;
  return std::any_of(claims.begin(), claims.end(), [&](const json& claim) {
    return claim.is_object() && claim.value("resourceClaimTemplateName", json()) == claimTemplate;
  });
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

  self->nodeInformer_ =
      std::make_unique<kube::Informer>(*kube, "/api/v1/nodes", cacheHandlers(raw, &raw->nodes_));
  self->workloadInformer_ = std::make_unique<kube::Informer>(*kube, contracts::workloadsPath(),
                                                             cacheHandlers(raw, &raw->workloads_));
  self->ultraServerInformer_ =
      std::make_unique<kube::Informer>(*kube, contracts::ultraServersPath(config.nameSpace),
                                       cacheHandlers(raw, &raw->ultraServers_));

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
    : config_(config), client_(std::move(kube)) {}

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
  if (health_) health_->stop();
  if (metrics_) metrics_->stop();
}

kube::InformerHandlers UltraServerOperator::cacheHandlers(UltraServerOperator* self, Cache* cache) {
  kube::InformerHandlers handlers;
  handlers.onList = [self, cache](const std::vector<std::shared_ptr<const json>>& items) {
    {
      std::lock_guard lock(self->mutex_);
      cache->clear();
      for (const auto& item : items)
        (*cache)[keyOf(*item)] = item;
    }
    self->markDirty();
  };
  handlers.onEvent = [self, cache](const kube::WatchEvent& event) {
    if (!event.object || event.type == "BOOKMARK") return;
    {
      std::lock_guard lock(self->mutex_);
      if (event.type == "DELETED") {
        cache->erase(keyOf(*event.object));
      } else {
        (*cache)[keyOf(*event.object)] = event.object;
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
         ultraServerInformer_->hasSynced();
}

void UltraServerOperator::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, stop, std::chrono::seconds(config_.resyncSeconds),
                     [this] { return dirty_; });
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

Result<std::vector<json>> UltraServerOperator::podsOf(const Workload& workload) {
  auto pods = client_.get("/api/v1/namespaces/" + workload.nameSpace + "/pods");
  if (!pods) return std::move(pods).error().withContext("listing the pods of " + workload.ref());
  std::vector<json> mine;
  const json& items = fieldAt(*pods, {"items"});
  if (items.is_array()) {
    for (const json& pod : items) {
      if (usesTemplate(pod, workload.claimTemplate)) mine.push_back(pod);
    }
  }
  return mine;
}

Result<void> UltraServerOperator::deletePods(const Workload& workload,
                                             const WorkloadOutcome& outcome,
                                             const std::vector<json>& pods) {
  const std::set<std::string> nodes(outcome.restartPodsOn.begin(), outcome.restartPodsOn.end());
  for (const json& pod : pods) {
    const std::string node = stringAt(pod, {"spec", "nodeName"});
    if (!outcome.restartAllPods && !nodes.count(node)) continue;
    if (!stringAt(pod, {"metadata", "deletionTimestamp"}).empty()) continue;
    const std::string name = stringAt(pod, {"metadata", "name"});
    auto removed = client_.remove("/api/v1/namespaces/" + workload.nameSpace + "/pods/" + name);
    if (!removed && removed.error().code != ErrorCode::kNotFound) {
      return std::move(removed).error().withContext("deleting pod " + workload.nameSpace + "/" +
                                                    name);
    }
    ++podsDeleted_;
    TORUS_LOG(Info, UltraServer, "deleted a pod of the workload", {"workload", workload.ref()},
              {"pod", name}, {"node", node},
              {"why", outcome.degradedReason.empty() ? contracts::workloadStateName(outcome.state)
                                                     : outcome.degradedReason});
  }
  return {};
}

Result<void> UltraServerOperator::writeUltraServers(const std::vector<UltraServer>& servers,
                                                    const std::vector<Allocation>& allocations,
                                                    const Cache& stored) {
  const std::string now = utcNowRfc3339();
  for (const UltraServer& server : servers) {
    const auto found = stored.find(config_.nameSpace + "/" + server.name);
    json object;
    if (found == stored.end()) {
      auto created = client_.create(contracts::ultraServersPath(config_.nameSpace),
                                    ultraServerObject(server, config_.nameSpace));
      // 409 (Aborted here) is "already exists": another writer, or our watch is behind.
      if (!created && created.error().code != ErrorCode::kAlreadyExists &&
          created.error().code != ErrorCode::kAborted) {
        return std::move(created).error().withContext("creating NeuronUltraServer " + server.name);
      }
      if (!created) continue;  // another writer made it: the next pass sees it
      object = *created;
      TORUS_LOG(Info, UltraServer, "found an UltraServer", {"name", server.name},
                {"nodes", static_cast<int>(server.nodes.size())});
    } else {
      object = *found->second;
    }
    const std::string path = contracts::ultraServersPath(config_.nameSpace) + "/" + server.name;
    if (const json spec = ultraServerSpec(server); fieldAt(object, {"spec"}) != spec) {
      auto patched = client_.mergePatch(path, {{"spec", spec}});
      if (!patched) return std::move(patched).error().withContext("updating " + server.name);
    }
    const json& previous = fieldAt(object, {"status"});
    const json status = ultraServerStatus(server, allocations, previous, now);
    if (previous != status) {
      auto patched = client_.mergePatch(path + "/status", {{"status", status}});
      if (!patched) {
        return std::move(patched).error().withContext("writing the status of " + server.name);
      }
    }
  }
  return {};
}

Result<void> UltraServerOperator::ensureClaimTemplate(const Workload& workload,
                                                      WorkloadOutcome& outcome) {
  const json wanted = claimTemplate(workload);
  const auto now = std::chrono::steady_clock::now();
  const auto ensured = ensuredTemplates_.find(workload.ref());
  if (ensured != ensuredTemplates_.end() && ensured->second.wanted == wanted &&
      now - ensured->second.checkedAt < std::chrono::seconds(config_.resyncSeconds)) {
    return {};
  }
  const std::string path = claimTemplatePath(workload.nameSpace, workload.claimTemplate);
  auto existing = client_.get(path);
  if (existing) {
    const json& owners = fieldAt(*existing, {"metadata", "ownerReferences"});
    const bool ours =
        owners.is_array() && std::any_of(owners.begin(), owners.end(), [&](const json& owner) {
          return owner.is_object() && owner.value("uid", json()) == workload.uid;
        });
    if (!ours) {
      outcome.state = WorkloadState::kFailed;
      outcome.reason = "ClaimTemplateExists";
      outcome.message = "ResourceClaimTemplate " + workload.nameSpace + "/" +
                        workload.claimTemplate +
                        " exists and is not this workload's: choose another "
                        "spec.resourceClaimTemplate.name or delete it";
      return {};
    }
    if (fieldAt(*existing, {"spec"}) == wanted["spec"]) {
      ensuredTemplates_[workload.ref()] = {wanted, now};
      return {};
    }
    // A template's spec cannot change: make it anew (claims made from the old one keep theirs).
    if (auto removed = client_.remove(path);
        !removed && removed.error().code != ErrorCode::kNotFound) {
      return std::move(removed).error().withContext("replacing " + path);
    }
  } else if (existing.error().code != ErrorCode::kNotFound) {
    return std::move(existing).error();
  }
  auto created = client_.create(claimTemplatePath(workload.nameSpace, ""), wanted);
  if (!created && created.error().code != ErrorCode::kAlreadyExists &&
      created.error().code != ErrorCode::kAborted) {
    return std::move(created).error().withContext(
        "creating ResourceClaimTemplate " + workload.nameSpace + "/" + workload.claimTemplate);
  }
  if (created) {
    TORUS_LOG(Info, UltraServer, "wrote the workload's ResourceClaimTemplate",
              {"workload", workload.ref()}, {"template", workload.claimTemplate});
  }
  ensuredTemplates_[workload.ref()] = {wanted, now};
  return {};
}

Result<void> UltraServerOperator::writeWorkload(const Workload& workload,
                                                const WorkloadOutcome& outcome, const json& stored,
                                                bool allocationsReleased) {
  const std::string path = contracts::workloadPath(workload.nameSpace, workload.name);
  if (workload.deleting) {
    if (allocationsReleased && hasFinalizer(stored)) {
      json finalizers = json::array();
      for (const json& finalizer : fieldAt(stored, {"metadata", "finalizers"})) {
        if (finalizer != kFinalizer) finalizers.push_back(finalizer);
      }
      auto patched = client_.mergePatch(
          path, {{"metadata",
                  {{"finalizers", finalizers},
                   {"resourceVersion", stringAt(stored, {"metadata", "resourceVersion"})}}}});
      if (!patched && patched.error().code != ErrorCode::kNotFound) {
        return std::move(patched).error().withContext("removing the finalizer of " +
                                                      workload.ref());
      }
      ensuredTemplates_.erase(workload.ref());
      TORUS_LOG(Info, UltraServer, "workload released", {"workload", workload.ref()});
      return {};
    }
  } else if (!hasFinalizer(stored)) {
    json finalizers = fieldAt(stored, {"metadata", "finalizers"});
    if (!finalizers.is_array()) finalizers = json::array();
    finalizers.push_back(kFinalizer);
    auto patched = client_.mergePatch(
        path, {{"metadata",
                {{"finalizers", finalizers},
                 {"resourceVersion", stringAt(stored, {"metadata", "resourceVersion"})}}}});
    if (!patched)
      return std::move(patched).error().withContext("adding the finalizer to " + workload.ref());
  }
  const json& previous = fieldAt(stored, {"status"});
  const json status = workloadStatus(workload, outcome, previous, utcNowRfc3339());
  if (previous == status) return {};
  // The reason of the Degraded condition while it was True, "" otherwise.
  std::string wasDegraded;
  if (const json& conditions = fieldAt(previous, {"conditions"}); conditions.is_array()) {
    for (const json& condition : conditions) {
      if (condition.is_object() && condition.value("type", json()) == "Degraded" &&
          condition.value("status", json()) == "True") {
        wasDegraded = stringAt(condition, {"reason"});
      }
    }
  }
  if (stringAt(previous, {"state"}) != contracts::workloadStateName(outcome.state) ||
      (outcome.degraded && wasDegraded != outcome.degradedReason)) {
    TORUS_LOG(Info, UltraServer, "workload state", {"workload", workload.ref()},
              {"state", contracts::workloadStateName(outcome.state)}, {"message", outcome.message});
    // An Event as well, so `kubectl describe nusw` and `kubectl get events` tell the story.
    const bool warning = outcome.state == WorkloadState::kFailed || outcome.degraded;
    json event = kube::eventObject(
        {std::string(contracts::kWorkloadKind), workload.name, workload.nameSpace, workload.uid},
        workload.nameSpace, !warning, outcome.degraded ? outcome.degradedReason : outcome.reason,
        outcome.degraded ? outcome.degradedMessage : outcome.message,
        "neuron-ultraserver-operator");
    event["involvedObject"]["apiVersion"] = contracts::kUltraServerApiVersion;
    if (auto posted = client_.create("/api/v1/namespaces/" + workload.nameSpace + "/events", event);
        !posted) {
      TORUS_LOG(Warn, UltraServer, "could not post an Event", {"workload", workload.ref()},
                {"error", posted.error().message});
    }
  }
  auto patched = client_.mergePatch(path + "/status", {{"status", status}});
  if (!patched && patched.error().code != ErrorCode::kNotFound) {
    return std::move(patched).error().withContext("writing the status of " + workload.ref());
  }
  return {};
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

Result<void> UltraServerOperator::reconcileOnce() {
  WorkloadFailures failures;
  Cache nodes;
  Cache workloadObjects;
  Cache stored;
  {
    std::lock_guard lock(mutex_);
    nodes = nodes_;
    workloadObjects = workloads_;
    stored = ultraServers_;
  }
  std::vector<MemberNode> members;
  for (const auto& [name, node] : nodes) {
    if (auto member = memberOf(*node)) members.push_back(std::move(*member));
  }
  const std::vector<UltraServer> servers = groupUltraServers(std::move(members));

  std::vector<Workload> workloads;
  std::map<std::string, std::vector<json>> listedPods;  // by workload ref, listed once a pass
  for (const auto& [key, object] : workloadObjects) {
    Workload workload = parseWorkload(*object);
    if (workload.deleting && !hasFinalizer(*object)) continue;  // not ours to hold back
    if (workload.deleting && workload.invalid.empty()) {
      auto pods = podsOf(workload);
      if (pods) {
        workload.podsRemain = !pods->empty();
        listedPods[workload.ref()] = std::move(*pods);
      } else {
        // Its finalizer stays until its pods can be seen gone; the other workloads go on.
        workload.podsRemain = true;
        failures.add(workload.ref(), pods.error());
      }
    }
    workloads.push_back(std::move(workload));
  }
  std::vector<Allocation> current;
  for (const auto& [name, object] : stored) {
    for (Allocation& allocation : allocationsOf(*object))
      current.push_back(std::move(allocation));
  }

  AllocationPlan plan = planAllocations(servers, workloads, current, utcNowRfc3339());

  // Pods first: a pod that must move is gone before its nodes are handed to anyone else.
  for (const Workload& workload : workloads) {
    const WorkloadOutcome& outcome = plan.outcomes[workload.ref()];
    if (!outcome.restartAllPods && outcome.restartPodsOn.empty()) continue;
    auto listed = listedPods.find(workload.ref());
    if (listed == listedPods.end()) {
      auto pods = podsOf(workload);
      if (!pods) {
        failures.add(workload.ref(), pods.error());
        continue;
      }
      listed = listedPods.emplace(workload.ref(), std::move(*pods)).first;
    }
    if (auto done = deletePods(workload, outcome, listed->second); !done) {
      failures.add(workload.ref(), done.error());
    }
  }
  if (auto done = writeUltraServers(servers, plan.allocations, stored); !done)
    return std::move(done).error();

  int allocated = 0;
  int waiting = 0;
  for (const Workload& workload : workloads) {
    WorkloadOutcome& outcome = plan.outcomes[workload.ref()];
    if (workload.invalid.empty() && !workload.deleting) {
      if (auto done = ensureClaimTemplate(workload, outcome); !done) {
        // Said on the workload itself (a quota, an admission policy of its namespace), which
        // keeps what it was given; the other workloads go on.
        outcome.degraded = true;
        outcome.degradedReason = "ClaimTemplateNotWritten";
        outcome.degradedMessage = done.error().message;
        failures.add(workload.ref(), done.error());
      }
    }
    const bool released = std::none_of(
        plan.allocations.begin(), plan.allocations.end(),
        [&](const Allocation& allocation) { return allocation.workloadRef == workload.ref(); });
    if (auto done = writeWorkload(workload, outcome, *workloadObjects.at(workload.ref()), released);
        !done) {
      failures.add(workload.ref(), done.error());
    }
    allocated += outcome.state == WorkloadState::kAllocated;
    waiting += outcome.state == WorkloadState::kPending ||
               outcome.state == WorkloadState::kPartiallyAllocated;
  }
  workloadsAllocated_.store(allocated);
  workloadsWaiting_.store(waiting);
  return failures.result();
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
  out.family("torus_ultraserver_pods_deleted_total", "counter",
             "Pods deleted by a failure strategy or a workload's deletion");
  out.sample("torus_ultraserver_pods_deleted_total", {}, static_cast<double>(podsDeleted_.load()));
  out.family("torus_ultraserver_workloads", "gauge", "Workloads by state after the last pass");
  out.sample("torus_ultraserver_workloads", {{"state", "Allocated"}}, workloadsAllocated_.load());
  out.sample("torus_ultraserver_workloads", {{"state", "Waiting"}}, workloadsWaiting_.load());
  out.family("torus_ultraserver_leader", "gauge", "1 while this replica holds the lease");
  out.sample("torus_ultraserver_leader", {}, !lease_ || lease_->isLeader() ? 1 : 0);
  return out.text();
}

}  // namespace torus::ultraserver
