#include "scheduler-extender/app/scheduler_extender.h"

#include <chrono>
#include <cstddef>

#include "common/base/log.h"
#include "common/kube/kube_config.h"
#include "scheduler-extender/server/http_routes.h"
#include "scheduler-extender/state/simulated_cluster.h"

namespace torus::extender {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;

}  // namespace

SchedulerExtender::SchedulerExtender(Key, const ExtenderConfig& config)
    : requestMemory_(static_cast<std::size_t>(config.requestMemoryMiB) * kMiB, kTrimAfterBytes) {}

SchedulerExtender::~SchedulerExtender() {
  stop();
}

Result<std::unique_ptr<SchedulerExtender>> SchedulerExtender::start(const ExtenderConfig& config) {
  auto extender = std::make_unique<SchedulerExtender>(Key{}, config);
  if (auto connected = extender->connect(config); !connected) return std::move(connected).error();
  if (auto serving = extender->serve(config); !serving) return std::move(serving).error();
  return extender;
}

Result<void> SchedulerExtender::connect(const ExtenderConfig& config) {
  if (!config.simulateCluster.empty()) {
    auto spec = parseSimulatedCluster(config.simulateCluster);
    if (!spec) return std::move(spec).error();
    auto added = addSimulatedNodes(state_, *spec);
    if (!added) {
      return makeError(ErrorCode::kInvalidArgument,
                       "cannot build the simulated cluster: " + added.error().message);
    }
    TORUS_LOG(Info, Extender, "simulated cluster ready", {"nodes", *added});
    return {};
  }
  auto kube = config.kubeconfig.empty()
                  ? kube::inClusterConfig()
                  : kube::loadKubeconfig(config.kubeconfig, config.kubeContext);
  if (!kube) {
    return makeError(ErrorCode::kInvalidArgument,
                     "no cluster to serve: pass --kubeconfig, run in a pod, or use "
                     "--simulate-cluster (" +
                         kube.error().message + ")");
  }
  TORUS_LOG(Info, Extender, "using the Kubernetes API", {"server", kube->server});
  SyncOptions syncOptions;
  syncOptions.assumeTtl = std::chrono::seconds(config.assumeTtlSeconds);
  syncOptions.podsFromApi = &podsFromApi_;
  bindAdmission_ = std::make_unique<BindAdmission>(*kube, nodeFacts_);
  syncOptions.bindAdmission = bindAdmission_.get();
  syncOptions.nodeFacts = &nodeFacts_;
  syncOptions.gangMembers = gangMembers_.get();
  syncOptions.nodeDomains = nodeDomains_.get();
  syncOptions.podGroups = podGroups_.get();
  if (config.crossResourcePreemption) {
    syncOptions.crossResourcePreemption =
        CrossResourcePreemptionOptions{.schedulerName = config.schedulerName};
  }
  sync_ = std::make_unique<ClusterSync>(*kube, state_, syncOptions);
  binder_ = std::make_unique<ApiBinder>(*kube, config.allocationEvents);
  return {};
}

Result<void> SchedulerExtender::serve(const ExtenderConfig& config) {
  auto address = http::parseListenAddress(config.listen);
  if (!address) return std::move(address).error();
  http::ServerOptions options;
  options.address = *address;
  options.maxBodyBytes = static_cast<std::size_t>(config.maxBodyMiB) * kMiB;
  options.tlsCertFile = config.tlsCertFile;
  options.tlsKeyFile = config.tlsKeyFile;
  options.tlsClientCaFile = config.tlsClientCaFile;
  ExtenderContext context{state_, pods_, metrics_};
  context.requestMemory = &requestMemory_;
  context.learnNodesFromRequests = sync_ == nullptr;
  context.binder = binder_.get();
  context.serveState = config.serveState;
  context.chooseInFilter = config.chooseInFilter;
  context.gangMembers = gangMembers_;
  context.nodeDomains = nodeDomains_;
  context.podGroups = podGroups_;
  if (sync_) {
    ClusterSync* sync = sync_.get();
    context.podsFromApi = &podsFromApi_;
    context.admitBind = [admission = bindAdmission_.get()](const PodDemand& pod,
                                                           const std::string& node) {
      return admission->check(pod, node);
    };
    context.ready = [sync] { return sync->hasSynced(); };
    context.moreMetrics = [sync] { return sync->metricsText(); };
  }
  if (!config.healthListen.empty()) {
    http::ServerOptions healthOptions;
    healthOptions.address = *http::parseListenAddress(config.healthListen);  // checked at start
    auto health = http::HttpServer::start(healthOptions, healthRoutes(context));
    if (!health) return std::move(health).error().withContext("--health-listen");
    healthServer_ = std::move(*health);
    TORUS_LOG(Info, Extender, "serving health and metrics", {"address", healthOptions.address.host},
              {"port", healthServer_->port()});
  }
  auto server = http::HttpServer::start(options, extenderRoutes(config.urlPrefix, context));
  if (!server) return std::move(server).error();
  server_ = std::move(*server);
  TORUS_LOG(Info, Extender, "serving", {"address", address->host}, {"port", server_->port()},
            {"prefix", config.urlPrefix.empty() ? "/" : config.urlPrefix},
            {"tls", !config.tlsCertFile.empty()},
            {"client_certificates", !config.tlsClientCaFile.empty()});
  return {};
}

void SchedulerExtender::stop() {
  if (server_) server_->stop();
  if (healthServer_) healthServer_->stop();
  sync_.reset();
}

}  // namespace torus::extender
