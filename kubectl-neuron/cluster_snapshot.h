// ClusterSnapshot: one list of nodes and pods from the API, applied the way the extender applies
// them (ClusterMirror), so kubectl-neuron shows exactly what the extender would believe.
#pragma once

#include <memory>
#include <vector>

#include "common/base/result.h"
#include "common/kube/kube_client.h"
#include "scheduler-extender/kube/kube_objects.h"
#include "scheduler-extender/state/cluster_state.h"

namespace torus::kubectl_neuron {

struct ClusterSnapshot {
  extender::ClusterState state;
  std::vector<extender::PodRecord> neuronPods;  // every pod that asks for Neuron resources
};

Result<std::unique_ptr<ClusterSnapshot>> loadClusterSnapshot(kube::KubeClient& client);

}  // namespace torus::kubectl_neuron
