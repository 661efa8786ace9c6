// Whether another agent will come to this node once this one stops. A stopping device-plugin
// agent taints its node so that no Neuron pod is bound while kubelet has no plugin
// (restarting_taint.h); only the next agent removes that taint. When the agent's DaemonSet is
// deleted (`helm upgrade --set nodeAgent.enabled=false`, a GitOps prune that runs no hook) or no
// longer selects the node, no next agent comes, and a taint would stay on the node for every pod
// until someone removed it by hand. The chart selects a node in several ways, each a node affinity
// term of its own (terms are ORed): its instance type is in neuronInstanceTypes, or it carries one
// of neuronNodeLabels (by default `torus.dev/neuron=true`, Karpenter's
// `karpenter.k8s.aws/instance-accelerator-manufacturer=aws`, or NFD's
// `feature.node.kubernetes.io/pci-0880_1d0f.present=true`). Every term also leaves out Fargate,
// hybrid and Auto Mode nodes and, with DRA on, the nodes of the other mode; nodeSelector applies
// on top. So a narrowed list, a label gone from the node or from the values, a node moved to the
// other mode or a changed nodeSelector can each leave the node with no next agent, and this reads
// the DaemonSet as the scheduler does rather than any one of those values.
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
