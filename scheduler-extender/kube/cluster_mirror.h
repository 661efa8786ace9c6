// ClusterMirror: applies Kubernetes Node and Pod objects to a ClusterState — Neuron nodes (type,
// LNC, unhealthy devices) and which bound pod holds which ids (AWS_NEURON_IDS) — and, when given
// them, to the gangs' members and the nodes' network domains. State is always
// derived from pods, never from node usage maps. A list replaces what it lists, so whatever a
// missed event left behind goes with the next list. Used by ClusterSync (list + watch) and by
// kubectl-neuron (one list of each). Thread-safe: ClusterSync's node and pod informers call it
// from their own threads, in either order.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/kube/kube_client.h"
#include "scheduler-extender/gang/gang_members.h"
#include "scheduler-extender/gang/node_domains.h"
#include "scheduler-extender/kube/kube_objects.h"
#include "scheduler-extender/state/cluster_state.h"

namespace torus::extender {

class ClusterMirror {
 public:
  explicit ClusterMirror(ClusterState& state, GangMembers* gangs = nullptr,
                         NodeDomainIndex* domains = nullptr)
      : state_(state), gangs_(gangs), domains_(domains) {}

  // What the informers deliver, read once by the caller (ClusterSync): a list replaces what it
  // lists; an update adds, changes or deletes one.
  void applyNodes(const std::vector<NodeUpdate>& nodes);
  void applyNode(const NodeUpdate& node);
  void applyPods(const std::vector<PodUpdate>& pods);
  void applyPod(const PodUpdate& pod);
  // A list as the API returns it (kubectl-neuron's one list of each).
  void applyNodeList(const std::vector<std::shared_ptr<const nlohmann::json>>& items);
  void applyPodList(const std::vector<std::shared_ptr<const nlohmann::json>>& items);

 private:
  void upsertNode(const NodeRecord& record);
  // Returns the pod's UID when it holds ids on a node.
  std::optional<std::string> applyLivePod(const PodUpdate& update);
  void forgetPod(const std::string& uid);
  void adoptWaitingPods(const std::string& node);
  // Tries the pods whose ids were held by another pod again, after something was released.
  void retryConflicting();

  ClusterState& state_;
  GangMembers* gangs_;
  NodeDomainIndex* domains_;
  // Pods seen bound to a node we do not know yet (nodes and pods are not listed in one order).
  std::mutex waitingMutex_;
  std::map<std::string, PodRecord> waitingForNode_;  // by UID
  // Pods whose ids another pod still holds here. When a node's agent corrects two swapped
  // hand-offs (kubelet gave A the ids promised to B and B those of A), the pods' updates arrive
  // one at a time and the first one conflicts until the second lands.
  std::map<std::string, PodRecord> conflicting_;  // by UID, under waitingMutex_
};

}  // namespace torus::extender
