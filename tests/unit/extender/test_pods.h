// Pod demands for the extender's unit tests: a pod named "pod-<uid>" asking `count` cores or
// devices through the matching resource.
#pragma once

#include <string>

#include "scheduler-extender/state/pod_demand.h"

namespace torus::extender::testing {

inline PodDemand testPod(const std::string& uid, topology::AllocationUnit unit, int count,
                         int priority = 0, const std::string& podNamespace = "default") {
  PodDemand demand;
  demand.name = "pod-" + uid;
  demand.namespace_ = podNamespace;
  demand.uid = uid;
  demand.unit = unit;
  demand.count = count;
  demand.priority = priority;
  demand.resourceName = unit == topology::AllocationUnit::kCore ? "aws.amazon.com/neuroncore"
                                                                : "aws.amazon.com/neuron";
  return demand;
}

}  // namespace torus::extender::testing
