// ClusterSync: keeps ClusterState equal to what the Kubernetes API says by listing and watching
// nodes and pods (ClusterMirror applies them), and gives back the ids of binds that never showed
// up on their pod. A restart, a reinstall or a missed event heals with the next list.
//
// The one intake: each Node and Pod the informers deliver is read once (parseNodeUpdate,
// parsePodUpdate) and that record goes to everything it matters to — the mirror, the node facts
// index, bind admission, the cross-resource preemptor and the pod cache.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/kube/informer.h"
#include "scheduler-extender/gang/pod_groups.h"
#include "scheduler-extender/kube/bind_admission.h"
#include "scheduler-extender/kube/cluster_mirror.h"
#include "scheduler-extender/kube/cross_resource_preemptor.h"
#include "scheduler-extender/kube/node_facts_index.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/state/pod_cache.h"

namespace torus::extender {

struct SyncOptions {
  // How long a bind of ours may go unseen on the pod before its cores are given back.
  std::chrono::milliseconds assumeTtl{std::chrono::minutes(5)};
  kube::InformerOptions informer;
  // Filled with every pending pod's Neuron demand as the API states it (for bind); unset: not kept.
  PodCache* podsFromApi = nullptr;
  // Fed the pending pods' node rules (for bind); unset: not kept.
  BindAdmission* bindAdmission = nullptr;
  // The nodes' scheduling facts, kept here for bind admission and the preemptor (one index for
  // both); unset: ClusterSync keeps one of its own when the preemptor needs it.
  NodeFactsIndex* nodeFacts = nullptr;
  // Evict pods of one Neuron resource for a more important pod of the other (off when unset).
  std::optional<CrossResourcePreemptionOptions> crossResourcePreemption;
  // Filled with the gangs' pods and the Neuron nodes' network domains; unset: not kept.
  GangMembers* gangMembers = nullptr;
  NodeDomainIndex* nodeDomains = nullptr;
  // Filled with the PodGroups (scheduling.k8s.io/v1beta1) when the API server serves them.
  PodGroupIndex* podGroups = nullptr;
};

class ClusterSync {
 public:
  ClusterSync(const kube::KubeConfig& config, ClusterState& state, SyncOptions options = {});
  ~ClusterSync();
  ClusterSync(const ClusterSync&) = delete;
  ClusterSync& operator=(const ClusterSync&) = delete;

  // Both nodes and pods have been listed at least once.
  bool hasSynced() const;
  // Prometheus text of the intake (Pod objects received and read) and of what runs beside the
  // mirror (cross-resource preemption).
  std::string metricsText() const;

 private:
  void expireLoop(std::stop_token stop);
  // Watches PodGroups once discovery shows the API server serves them; asks again on errors.
  void watchPodGroupsIfServed(const kube::KubeConfig& config, std::stop_token stop);
  void applyNodes(const std::vector<std::shared_ptr<const nlohmann::json>>& items);
  void applyNodeEvent(const kube::WatchEvent& event);
  void applyPods(const std::vector<std::shared_ptr<const nlohmann::json>>& items);
  void applyPodEvent(const kube::WatchEvent& event);
  void rememberDemand(const PodUpdate& pod);

  ClusterState& state_;
  SyncOptions options_;
  std::atomic<std::uint64_t> podObjectsReceived_{0};  // list items and events other than DELETED
  ClusterMirror mirror_;
  std::unique_ptr<NodeFactsIndex> ownFacts_;           // when options_.nodeFacts is unset
  NodeFactsIndex* nodeFacts_ = nullptr;                // options_.nodeFacts, else ownFacts_
  std::unique_ptr<CrossResourcePreemptor> preemptor_;  // before the informers that feed it
  std::unique_ptr<kube::Informer> nodes_;
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<kube::Informer> podGroups_;  // set once by podGroupProbe_
  std::jthread expirer_;
  std::jthread podGroupProbe_;
};

}  // namespace torus::extender
