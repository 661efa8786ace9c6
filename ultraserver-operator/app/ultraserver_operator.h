// UltraServerOperator: the controller behind neuron-ultraserver-operator: its loop, lease and
// wiring (the writes are kube/operator_api.h, the decisions model/). It watches Nodes,
// NeuronUltraServerWorkloads (every namespace) and the NeuronUltraServer objects (its own
// namespace), and, while it holds the lease, reconciles them: one NeuronUltraServer per
// UltraServer the agents' node labels describe, the allocations model/allocator.h decides
// recorded in their statuses, each workload's ResourceClaimTemplate and status, and the pods the
// failure strategies restart. A workload carries the finalizer neuron.aws.com/ultraserver-operator
// until its pods are gone and its UltraServers released.
//
// Every pass starts from the API's objects, so a pass that fails half-way (a write refused, the
// lease lost) is finished by the next one; a pass runs on every change (debounced) and every
// --resync.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/http/http_server.h"
#include "common/kube/informer.h"
#include "common/kube/leader_lease.h"
#include "ultraserver-operator/app/operator_config.h"
#include "ultraserver-operator/kube/operator_api.h"
#include "ultraserver-operator/model/allocator.h"

namespace torus::ultraserver {

class UltraServerOperator {
 public:
  static Result<std::unique_ptr<UltraServerOperator>> start(const OperatorConfig& config);
  UltraServerOperator(const OperatorConfig& config, kube::KubeConfig kube);
  ~UltraServerOperator();
  UltraServerOperator(const UltraServerOperator&) = delete;
  UltraServerOperator& operator=(const UltraServerOperator&) = delete;

  void stop();
  // True once the lease was lost: the process should exit so that it starts again as a
  // candidate with fresh caches.
  bool lostLease() const { return lostLease_.load(); }

 private:
  using Cache = OperatorApi::Cache;
  // Keeps of an object only what the operator reads (nullptr: all of it).
  using Slim =
      std::shared_ptr<const nlohmann::json> (*)(const std::shared_ptr<const nlohmann::json>&);
  static kube::InformerHandlers cacheHandlers(UltraServerOperator* self, Cache* cache,
                                              Slim slim = nullptr);
  void markDirty();
  bool synced() const;
  void run(std::stop_token stop);
  struct Pass;  // one reconcile pass's objects, findings and errors (reconcile_pass.cc)
  Result<void> reconcileOnce();
  // The steps of a pass, in order. readWorkload: parsed, its template checked (or, deleting,
  // deleted) and its pods listed; nullopt for a deleting workload that is not ours to hold.
  std::optional<Workload> readWorkload(const nlohmann::json& object, Pass& pass);
  // Pods first: sets podsRemain on each workload the plan takes nodes from while its pods still
  // run there (listing them, once a pass); true when it set any, and the plan must be made again.
  bool findPodsOnNodesGivenUp(Pass& pass, const std::vector<Allocation>& current,
                              const AllocationPlan& plan);
  // What the planner cannot know: the template's verdict, pods that do not go.
  void completeOutcomes(Pass& pass, AllocationPlan& plan);
  void evictPods(Pass& pass, AllocationPlan& plan);
  // Each workload's finalizer, status and Events; the workload gauges.
  void writeWorkloads(Pass& pass, AllocationPlan& plan);
  // A deleted workload whose pods are still there after the failure grace period is Degraded
  // (PodsNotGone) naming them, their nodes and their controllers.
  void reportPodsNotGone(const Workload& workload, const nlohmann::json& object,
                         const std::map<std::string, OperatorApi::WorkloadPods>& listed,
                         WorkloadOutcome& outcome);
  // A Warning Event naming the controllers that keep making pods of a released workload's
  // template (they can never start).
  void reportRecreators(const Workload& workload,
                        const std::map<std::string, OperatorApi::WorkloadPods>& listed);
  std::string metricsText() const;

  OperatorConfig config_;
  OperatorApi api_;

  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  bool dirty_ = true;
  Cache nodes_;
  Cache workloads_;
  Cache ultraServers_;
  Cache claims_;  // ResourceClaims: nodes busy with claims of no workload are not reserved

  std::atomic<std::uint64_t> passes_{0};
  std::atomic<std::uint64_t> failedPasses_{0};
  int failedInARow_ = 0;                           // the run thread's alone
  std::optional<std::chrono::seconds> recheckIn_;  // the run thread's alone: AllocationPlan's
  std::atomic<int> workloadsAllocated_{0};
  std::atomic<int> workloadsWaiting_{0};
  std::atomic<bool> lostLease_{false};

  std::unique_ptr<kube::LeaderLease> lease_;
  std::unique_ptr<kube::Informer> nodeInformer_;
  std::unique_ptr<kube::Informer> workloadInformer_;
  std::unique_ptr<kube::Informer> ultraServerInformer_;
  std::unique_ptr<kube::Informer> claimInformer_;
  std::unique_ptr<http::HttpServer> health_;
  std::unique_ptr<http::HttpServer> metrics_;
  std::jthread worker_;
};

}  // namespace torus::ultraserver
