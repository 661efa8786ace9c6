// Nodes and Pods as the Kubernetes API returns them, reduced to what the extender's state needs.
// Pure parsing: every error names the object and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "common/contracts/topology_annotation.h"
#include "common/topology/core_set.h"
#include "scheduler-extender/gang/node_domains.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/state/node_eligibility.h"
#include "scheduler-extender/state/pod_demand.h"

namespace torus::extender {

struct NodeRecord {
  std::string name;
  std::string instanceType;  // the instance-type label, or the topology annotation's
  int lnc = 0;               // 0: the type's default
  topology::DeviceSet unhealthy;
  // The agent's torus.dev/topology annotation, when present and readable: the node as discovered.
  std::optional<contracts::TopologySummary> topology;
  // The agent's torus.dev/topology annotation was present but unusable (the catalog is used).
  std::string topologyProblem;
  // What kubelet holds Unhealthy (the agent's torus.dev/kubelet-unavailable); empty when absent.
  KubeletRefusal kubeletRefuses;
  // The annotation was present but unreadable: the node takes no Neuron pod until it is fixed.
  std::string kubeletViewProblem;
  // What kube-scheduler's node filters judge (labels, taints, cordon): bind admission and the
  // cross-resource preemptor read them.
  NodeFacts facts;
  // Its network domains and UltraServer pair, from its labels (gangs are placed by them).
  NodeDomains domains;
  // kubelet's allocatable counts some aws.amazon.com/neuron or /neuroncore: a device plugin
  // serves there now. What makes a node of a type the catalog lacks a Neuron node, beside its
  // agent's report, which stays on the Node after the agent has left.
  bool kubeletAdvertisesNeuron = false;
};

Result<NodeRecord> parseNodeRecord(const nlohmann::json& node);

// A Node event as the node informer delivers it, read once (parseNodeUpdate) and handed to
// everything the node matters to.
struct NodeUpdate {
  std::string name;
  bool deleted = false;              // a DELETED event: only the name is set
  std::optional<NodeRecord> record;  // unset when deleted or unreadable
  std::string problem;               // why it is unreadable
};

NodeUpdate parseNodeUpdate(const nlohmann::json& node, bool deleted);

struct PodRecord {
  PodDemand demand;
  std::string nodeName;                          // spec.nodeName; empty while pending
  std::string phase;                             // status.phase
  std::optional<topology::CoreSet> assignedIds;  // AWS_NEURON_IDS
  std::string idsProblem;                        // the annotation was present but unreadable
  std::string allocatedFlag;                     // NEURON_ALLOCATED ("true"/"false"), if set
  std::string schedulerName;                     // spec.schedulerName
  std::string nominatedNodeName;                 // status.nominatedNodeName (kube-scheduler's)
  bool deleting = false;                         // metadata.deletionTimestamp is set
  // PodScheduled is False with reason Unschedulable: kube-scheduler tried, found no node, and —
  // with no nominated node — found nothing to preempt either.
  bool unschedulable = false;
  // Its nodeSelector and required node affinity, read only for a pending pod that asks for
  // Neuron: what a bind or a preemption can be about.
  PodNodeRules nodeRules;

  // Succeeded and Failed pods have released their devices (kubelet frees them at that point).
  bool finished() const { return phase == "Succeeded" || phase == "Failed"; }
  // Bound to a node, still running or about to, and asking for Neuron resources.
  bool holdsNeuron() const { return demand.wantsNeuron() && !nodeName.empty() && !finished(); }
  // Asks for Neuron resources and is stuck: not bound, not going, no node nominated for it.
  bool waitsUnschedulable() const {
    return demand.wantsNeuron() && nodeName.empty() && !finished() && !deleting && unschedulable &&
           nominatedNodeName.empty();
  }
};

Result<PodRecord> parsePodRecord(const nlohmann::json& pod);

// A Pod event as the pod informer delivers it, read once (parsePodUpdate) and handed to the
// mirror, the cross-resource preemptor, bind admission and the pod cache alike.
struct PodUpdate {
  std::string uid;
  std::string key;                  // namespace/name, for logs
  bool deleted = false;             // a DELETED event: only uid and key are set
  std::optional<PodRecord> record;  // unset when deleted or unreadable
  std::string problem;              // why it is unreadable
};

PodUpdate parsePodUpdate(const nlohmann::json& pod, bool deleted);

// How many Pod objects parsePodRecord has read in this process: the extender reads each Pod the
// informer delivers once (a DELETED event not at all), which its /metrics shows and its tests hold
// it to.
std::uint64_t podObjectsRead();

}  // namespace torus::extender
