// `neuron-node-agent forget-nodes`: removes from every Node what agents published — their labels
// (torus.dev/*, UltraServer), their torus.dev/* annotations, the device plugin's restarting taint
// and the NeuronHealthy condition —
// so that `helm uninstall` leaves nodes as it found them (the chart runs it as a post-delete
// hook). Single-key patches: nothing else on a Node is touched.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace torus::agent {

// The merge-patch that removes the agent's keys from `node`; null when it carries none.
nlohmann::json forgetMetadataPatch(const nlohmann::json& node);
// Whether `node` carries the agent's NeuronHealthy condition.
bool hasNeuronCondition(const nlohmann::json& node);

// Reaches the API through `kubeconfig`, or in-cluster when it is "" (the agent's --kubeconfig).
// Exit code: 0 when every node is clean, 1 when a node could not be patched, 2 without API access.
int runForgetNodesCommand(const std::string& kubeconfig);

}  // namespace torus::agent
