// The scheduler extender's hand-off, as the device plugin sees it. kubelet's
// GetPreferredAllocation and Allocate say how many ids a container needs but not which pod it is,
// so, like AWS's plugin, we match by what the extender promised: a pod bound to this node whose
// AWS_NEURON_IDS has exactly that many ids of this resource, all still available, and
// NEURON_ALLOCATED still "false". The oldest promise (NEURON_ALLOC_TIME) goes first, as kubelet
// admits pods in the order they were bound.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/topology/core_set.h"
#include "device-plugin/assignments.h"
#include "device-plugin/resource_kind.h"

namespace torus::plugin {

struct PromisedPod {
  std::string uid;
  std::string key;  // namespace/name, for logs
  ResourceKind kind = ResourceKind::kNeuronCore;
  topology::CoreSet ids;  // AWS_NEURON_IDS
  std::int64_t allocTimeNs = 0;
  bool allocated = false;               // NEURON_ALLOCATED=true, or we already gave these ids out
  std::optional<int> ultraServerNodes;  // torus.dev/ultraserver-nodes: an UltraServer job's
};

// The promise kubelet's request fits, if any. `kind` matches neuron and neurondevice with each
// other (both count whole devices).
std::optional<PromisedPod> matchPromise(const std::vector<PromisedPod>& promises, ResourceKind kind,
                                        int size, const topology::CoreSet& available,
                                        const topology::CoreSet& mustInclude);

class SchedulerHandoff {
 public:
  virtual ~SchedulerHandoff() = default;
  // The ids the extender chose for the container kubelet is placing now, if it chose any.
  virtual std::optional<topology::CoreSet> promisedIds(ResourceKind kind, int size,
                                                       const topology::CoreSet& available,
                                                       const topology::CoreSet& mustInclude) = 0;
  // kubelet allocated these ids: the pod promised them is marked NEURON_ALLOCATED=true.
  virtual void allocated(ResourceKind kind, const topology::CoreSet& ids) = 0;
  // How many nodes of one UltraServer the pod promised exactly these ids runs on as one job
  // (PromisedPod::ultraServerNodes), asked before `allocated`; none when no such promise.
  virtual std::optional<int> ultraServerNodes(ResourceKind kind, const topology::CoreSet& ids) {
    (void)kind;
    (void)ids;
    return std::nullopt;
  }
  // The plugin would not hand out this promise (`why`: the placement rule it breaks on the node
  // as discovered, e.g. a NeuronLink that is down); the pod is told (an Event).
  virtual void refused(ResourceKind kind, const topology::CoreSet& ids, const std::string& why) {
    (void)kind;
    (void)ids;
    (void)why;
  }
  // What kubelet's pod-resources says each pod really holds (after every List). kubelet never
  // says which pod a GetPreferredAllocation is for, so a pod can end up with another pod's
  // promise; the hand-off is then corrected to what the pod holds, so that whoever accounts from
  // AWS_NEURON_IDS (the extender) sees the truth. Returns whether a pod the API already shows
  // ended is still among them: kubelet is tearing it down, and the caller asks again soon, so its
  // ids go back into service as soon as kubelet lets them go rather than at the next poll.
  virtual bool kubeletHolds(const std::vector<Holder>& holders) {
    (void)holders;
    return false;
  }
};

}  // namespace torus::plugin
