// Whether another agent will come to this node once this one stops. A stopping device-plugin
// agent taints its node so that no Neuron pod is bound while kubelet has no plugin
// (restarting_taint.h); only the next agent removes that taint. When the agent's DaemonSet is
// deleted (`helm upgrade --set nodeAgent.enabled=false`, a GitOps prune that runs no hook) or no
// longer selects the node (narrowed neuronInstanceTypes or nodeSelector), no next agent comes,
// and a taint would stay on the node for every pod until someone removed it by hand.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "common/kube/kube_client.h"

namespace torus::agent {

// Whether `daemonSet`'s pod template would run on `node`: its nodeSelector and its required node
// affinity (terms ORed, each term's expressions ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt on
// labels, In and NotIn on metadata.name) as kube-scheduler reads them. A field it cannot read is
// an error naming it.
Result<bool> templateSelectsNode(const nlohmann::json& daemonSet, const nlohmann::json& node);

// Reads the DaemonSet `reference` ("namespace/name") and the Node: true when the DaemonSet
// exists, is not being deleted and selects the node.
Result<bool> successorExpected(kube::KubeClient& client, const std::string& reference,
                               const std::string& nodeName);

}  // namespace torus::agent
