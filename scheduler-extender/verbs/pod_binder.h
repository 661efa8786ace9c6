// PodBinder: where a bind decision goes besides our own state — the Kubernetes API in a real
// cluster (annotations, Binding, Event; a gang's nominated nodes), nowhere in a simulated one.
#pragma once

#include <optional>
#include <string>

#include "common/base/result.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/state/pod_demand.h"

namespace torus::extender {

class PodBinder {
 public:
  virtual ~PodBinder() = default;
  // Hands the decided ids to the node and binds the pod; an error means the pod is not bound
  // (the reservation is then released by the caller). `ultraServerNodes`: the pod is one of a
  // gang running as one UltraServer job of that many nodes (gang/ultraserver_job.h).
  virtual Result<void> bind(const PodDemand& pod, const Allocation& allocation,
                            std::optional<int> ultraServerNodes) = 0;
  // The pod's demand when filter never showed it to us (e.g. the extender restarted between
  // kube-scheduler's filter and bind).
  virtual Result<PodDemand> fetchPod(const std::string& podNamespace, const std::string& name) = 0;
  // Tells kube-scheduler (status.nominatedNodeName) which node a gang's plan holds for the pod,
  // so it tries that node first. In the background; a courtesy that may be lost.
  virtual void nominate(const PodDemand& pod, const std::string& node) = 0;
};

}  // namespace torus::extender
