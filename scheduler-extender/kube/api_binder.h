// ApiBinder: carries a bind decision to the cluster in one call: a Binding pinned to the pod's UID
// whose annotations (AWS_NEURON_IDS, NEURON_ALLOC_TIME, NEURON_ALLOCATED=false,
// NEURON_RESOURCE_TYPE) the API server merges into the pod together with its node, so the node's
// plugin always finds the ids once the pod lands, and other annotations stay. A failed bind
// gets an Event on the pod saying why; a successful one gets a NeuronAllocated Event naming its
// ids only with allocationEvents (one more API write per pod, beside kube-scheduler's own
// Scheduled Event). Events are posted in the background, after the bind answers.
//
// Retries are safe: a Binding refused because the pod is already on that very node with these
// ids counts as done.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/contracts/neuron_handoff.h"
#include "common/kube/kube_client_pool.h"
#include "scheduler-extender/kube/courtesy_writer.h"
#include "scheduler-extender/verbs/pod_binder.h"

namespace torus::extender {

class ApiBinder final : public PodBinder {
 public:
  explicit ApiBinder(const kube::KubeConfig& config, bool allocationEvents = false);

  Result<void> bind(const PodDemand& pod, const Allocation& allocation,
                    std::optional<int> ultraServerNodes) override;
  Result<PodDemand> fetchPod(const std::string& podNamespace, const std::string& name) override;
  void nominate(const PodDemand& pod, const std::string& node) override;

 private:
  Result<void> postBinding(kube::KubeClient& client, const PodDemand& pod, const std::string& node,
                           const contracts::Handoff& handoff);
  void postEvent(const PodDemand& pod, bool normal, const std::string& reason,
                 const std::string& message);

  // Binds arrive in parallel; each borrows a kept-alive connection for its three calls.
  kube::KubeClientPool clients_;
  CourtesyWriter courtesy_;  // Events, nominations
  bool allocationEvents_;
};

}  // namespace torus::extender
