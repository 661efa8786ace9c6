// The objects the UltraServer operator writes, as JSON for the API (kube/operator_api.h sends
// them): NeuronUltraServer (spec and status), a NeuronUltraServerWorkload's status, and the
// ResourceClaimTemplate a workload's pods name. Pure functions of the model, so tests check every
// field.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/contracts/neuron_ultraserver.h"
#include "ultraserver-operator/model/allocator.h"

namespace torus::ultraserver {

std::string claimTemplatePath(const std::string& nameSpace, const std::string& name);

// A whole NeuronUltraServer object for create: metadata and spec (nodes, their ids, link status
// "up" while the node is Ready, else "down": Torus has no per-link counters, so a link is
// reported by the node at each end of it).
nlohmann::json ultraServerObject(const UltraServer& server, const std::string& nameSpace);
nlohmann::json ultraServerSpec(const UltraServer& server);

// Its status: state Ready or Degraded, the allocations, and the Ready and Allocated conditions.
// `previous` (the stored status) keeps conditions' lastTransitionTime when their status holds.
nlohmann::json ultraServerStatus(const UltraServer& server,
                                 const std::vector<Allocation>& allocations,
                                 const nlohmann::json& previous, const std::string& now);

// A workload's status: state, allocatedUltraServers, allocatedAt, the Ready, Progressing and
// Degraded conditions and observedGeneration.
nlohmann::json workloadStatus(const Workload& workload, const WorkloadOutcome& outcome,
                              const nlohmann::json& previous, const std::string& now);

// The ResourceClaimTemplate: one request for this node's `neuronnode` device (the whole
// UltraServer node) among the devices tagged with the workload's id, tolerating their
// neuron.aws.com/reserved taint, the UltraServer mode and
// LNC as opaque config, the claims annotated with the workload, owned by the workload so that
// deleting it deletes the template.
nlohmann::json claimTemplate(const Workload& workload);

}  // namespace torus::ultraserver
