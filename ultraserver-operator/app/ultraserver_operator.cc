#include "ultraserver-operator/app/ultraserver_operator.h"

#include <algorithm>

#include "common/base/log.h"
#include "common/base/strings.h"
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
        (*cache)[kube::keyOf(*item)] = slim ? slim(item) : item;
    }
    self->markDirty();
  };
  handlers.onEvent = [self, cache, slim](const kube::WatchEvent& event) {
    if (!event.object || event.type == "BOOKMARK") return;
    {
      std::lock_guard lock(self->mutex_);
      if (event.type == "DELETED") {
        cache->erase(kube::keyOf(*event.object));
      } else {
        (*cache)[kube::keyOf(*event.object)] = slim ? slim(event.object) : event.object;
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
