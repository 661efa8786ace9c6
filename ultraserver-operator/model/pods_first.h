// Pods first: which nodes a plan takes from a workload, and whether its pods are still there, so
// that the operator can keep those nodes the workload's until they are gone (allocator.h's rule
// "Pods first"). Pure: the plan and the pods as the API listed them in, an answer out. What is
// evicted and when is the operator's (app/reconcile_pass.cc); what is held, the allocator's.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ultraserver-operator/model/allocator.h"

namespace torus::ultraserver {

// The nodes each workload that is not being deleted gives up in `plan`: recorded for it in
// `current`, not held by it in the plan. By workload ref; workloads that give up none are absent.
// (A deleting workload's nodes are held by its finalizer until its pods are gone.)
std::map<std::string, std::set<std::string>> nodesGivenUp(const std::vector<Workload>& workloads,
                                                          const std::vector<Allocation>& current,
                                                          const AllocationPlan& plan);

// Whether one of `pods` (a workload's own) still runs on one of `nodes`: it is listed, has not
// ended (Succeeded, Failed) and is on a node that is Ready. An evicted pod stays listed while it
// terminates. One on a node that is not Ready is left out: that node goes to nobody while it is
// down, and a pod there ends only when the node returns or is deleted, so waiting for it would
// keep a RestartAll from ever moving off a dead node.
bool podsStillOn(const std::vector<nlohmann::json>& pods, const std::set<std::string>& nodes,
                 const std::vector<UltraServer>& servers);

}  // namespace torus::ultraserver
