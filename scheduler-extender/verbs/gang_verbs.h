// The verbs for a pod of a gang (torus.dev/gang): all of the gang's Neuron pods are placed at
// once or none is. The first member kube-scheduler asks about, once every member exists, plans
// the whole gang (gang_planner) and reserves each member's cores on its node; each member then
// passes only on its own node, and the others are nominated there so kube-scheduler tries it
// first. A gang that does not fit whole holds nothing and each member fails with the reason.
#pragma once

#include <string>
#include <vector>

#include "scheduler-extender/gang/gang_members.h"
#include "scheduler-extender/gang/node_domains.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/verbs/pod_binder.h"
#include "scheduler-extender/verbs/verbs.h"

namespace torus::extender {

struct Gangs {
  GangMembers& members;
  const NodeDomainIndex& domains;
  PodBinder* nominator = nullptr;  // none in a simulated cluster
  // Whether the pod in a filter request counts as a member (no API to list pods: a simulated
  // cluster). Otherwise only pods the API lists count, so a forged request reserves nothing.
  bool trustRequests = false;
};

// `pod` must have a gang or a gang problem (PodDemand::gang, gangProblem) and want Neuron.
FilterResult filterGangMember(ClusterState& state, const Gangs& gangs, const PodDemand& pod,
                              const std::vector<std::string>& nodeNames);

// A placed member's node scores highest; before its gang is placed, every node scores 0.
std::vector<HostPriority> prioritizeGangMember(const ClusterState& state, const PodDemand& pod,
                                               const std::vector<std::string>& nodeNames);

}  // namespace torus::extender
