// BindAdmission: at bind, the rules kube-scheduler's node filters apply (cordon, taints and
// tolerations, nodeSelector, required node affinity: state/node_eligibility.h), judged again on
// the Node and the Pod as the API states them. A bind request names only a pod and a node, and
// anyone who reaches the extender's port can send one (or a filter request that passes any node
// it likes); with this check no request puts a pod on a node its own rules keep it off.
//
// Fed the pods as ClusterSync reads them, and judged on the nodes of its one NodeFactsIndex; a pod
// the pod watch has not shown yet is fetched.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "common/kube/kube_client_pool.h"
#include "scheduler-extender/kube/node_facts_index.h"
#include "scheduler-extender/state/node_eligibility.h"
#include "scheduler-extender/state/pod_demand.h"

namespace torus::extender {

class BindAdmission {
 public:
  // `nodes` outlives this object (the extender owns both; ClusterSync keeps it current).
  BindAdmission(const kube::KubeConfig& config, const NodeFactsIndex& nodes);

  // A list replaces the pending pods; an update adds, changes or deletes one.
  void applyPods(const std::vector<PodUpdate>& pods);
  void applyPod(const PodUpdate& pod);

  // Whether the node admits the pod; the error names the rule that keeps it off.
  Result<void> check(const PodDemand& pod, const std::string& node);

  std::size_t pendingPods() const;

 private:
  // Only pods a bind can be about: wanting Neuron, not bound, not deleted.
  void applyPodLocked(const PodUpdate& pod);

  kube::KubeClientPool clients_;
  const NodeFactsIndex& nodes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, PodNodeRules> pendingPods_;  // by UID, under mutex_
};

}  // namespace torus::extender
