// ClusterSync: keeps ClusterState equal to what the Kubernetes API says — Neuron nodes (type,
// LNC, unhealthy devices) and which bound pod holds which ids (AWS_NEURON_IDS) — by listing and
// watching nodes and pods. State is always derived from pods, never from node usage maps, so a
// restart, a reinstall or a missed event heals with the next list.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/kube/informer.h"
#include "scheduler-extender/kube/kube_objects.h"
#include "scheduler-extender/state/cluster_state.h"

namespace torus::extender {

struct SyncOptions {
  // How long a bind of ours may go unseen on the pod before its cores are given back.
  std::chrono::milliseconds assumeTtl{std::chrono::minutes(5)};
  kube::InformerOptions informer;
};

class ClusterSync {
 public:
  ClusterSync(const kube::KubeConfig& config, ClusterState& state, SyncOptions options = {});
  ~ClusterSync();
  ClusterSync(const ClusterSync&) = delete;
  ClusterSync& operator=(const ClusterSync&) = delete;

  // Both nodes and pods have been listed at least once.
  bool hasSynced() const;

 private:
  void applyNodeList(const std::vector<std::shared_ptr<const nlohmann::json>>& items);
  void applyNodeEvent(const kube::WatchEvent& event);
  void applyPodList(const std::vector<std::shared_ptr<const nlohmann::json>>& items);
  void applyPodEvent(const kube::WatchEvent& event);
  void upsertNode(const nlohmann::json& object);
  // Returns the pod's UID when it holds ids on a node.
  std::optional<std::string> applyPod(const nlohmann::json& object);
  void forgetPod(const nlohmann::json& object);
  void adoptWaitingPods(const std::string& node);
  void expireLoop(std::stop_token stop);

  ClusterState& state_;
  SyncOptions options_;
  // Pods seen bound to a node we do not know yet (the two watches are not ordered).
  std::mutex waitingMutex_;
  std::map<std::string, PodRecord> waitingForNode_;  // by UID
  std::unique_ptr<kube::Informer> nodes_;
  std::unique_ptr<kube::Informer> pods_;
  std::jthread expirer_;
};

}  // namespace torus::extender
