// PodDemand: what a pod asks of the Neuron resources, summed the way kube-scheduler sums them
// (containers add up; an init container runs alone, so the pod needs the larger of the two).
#pragma once

#include <string>

#include "common/topology/placement.h"

namespace torus::extender {

struct PodDemand {
  std::string name;
  std::string namespace_;
  std::string uid;
  topology::AllocationUnit unit = topology::AllocationUnit::kCore;
  int count = 0;             // 0: the pod asks for no Neuron resource
  std::string resourceName;  // the resource it asked through
  // spec.priority as the API server resolved it from the PriorityClass (0 when unset): only pods
  // of lower priority may be preempted for this one.
  int priority = 0;

  bool wantsNeuron() const { return count > 0; }
  std::string key() const { return namespace_ + "/" + name; }
};

}  // namespace torus::extender
