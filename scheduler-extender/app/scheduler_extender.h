// SchedulerExtender: the whole neuron-scheduler-extender as one object — the cluster state (fed by
// the Kubernetes API or simulated), the binder, and the HTTP server of the verbs — so main() only
// parses settings and waits for a signal, and tests can run the real thing in-process.
#pragma once

#include <memory>

#include "common/base/memory_budget.h"
#include "common/base/result.h"
#include "common/http/http_server.h"
#include "scheduler-extender/app/extender_config.h"
#include "scheduler-extender/kube/api_binder.h"
#include "scheduler-extender/kube/cluster_sync.h"
#include "scheduler-extender/server/verb_metrics.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/state/pod_cache.h"

namespace torus::extender {

class SchedulerExtender {
 public:
  // `config` as normalizeExtenderConfig() left it. Errors: an unusable simulated cluster or
  // kubeconfig (InvalidArgument), an address that cannot be served.
  static Result<std::unique_ptr<SchedulerExtender>> start(const ExtenderConfig& config);
  ~SchedulerExtender();
  SchedulerExtender(const SchedulerExtender&) = delete;
  SchedulerExtender& operator=(const SchedulerExtender&) = delete;

  int port() const { return server_->port(); }
  // The --health-listen port; 0 when health and metrics share --listen.
  int healthPort() const { return healthServer_ ? healthServer_->port() : 0; }
  // Stops serving, then the informers; idempotent.
  void stop();

 private:
  struct Key {};  // only start() makes one

 public:
  SchedulerExtender(Key, const ExtenderConfig& config);

 private:
  Result<void> connect(const ExtenderConfig& config);  // the API or the simulated cluster
  Result<void> serve(const ExtenderConfig& config);

  ClusterState state_;
  PodCache podsFromApi_;
  PodCache pods_;
  std::shared_ptr<GangMembers> gangMembers_ = std::make_shared<GangMembers>();
  std::shared_ptr<NodeDomainIndex> nodeDomains_ = std::make_shared<NodeDomainIndex>();
  std::shared_ptr<PodGroupIndex> podGroups_ = std::make_shared<PodGroupIndex>();
  VerbMetrics metrics_;
  MemoryBudget requestMemory_;
  NodeFactsIndex nodeFacts_;                      // kept by sync_, read by bindAdmission_
  std::unique_ptr<BindAdmission> bindAdmission_;  // before sync_, whose informers feed it
  std::unique_ptr<ClusterSync> sync_;
  std::unique_ptr<ApiBinder> binder_;
  std::unique_ptr<http::HttpServer> healthServer_;  // --health-listen; unset when not asked for
  std::unique_ptr<http::HttpServer> server_;        // last: stopped before what its routes use
};

}  // namespace torus::extender
