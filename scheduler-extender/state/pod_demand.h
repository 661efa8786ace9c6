// PodDemand: what a pod asks of the Neuron resources, summed the way kube-scheduler sums them
// (containers add up; an init container runs alone, so the pod needs the larger of the two).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "common/topology/placement.h"

namespace torus::extender {

// A gang: pods placed all or none. Either labelled by the user (torus.dev/gang,
// torus.dev/gang-size: exactly `size` pods) or members of an upstream PodGroup with a gang policy
// (at least `size`: its minCount, read from the PodGroup when the pod is filtered).
struct GangRef {
  std::string name;  // within the pod's namespace
  int size = 0;
  bool fromPodGroup = false;
  bool operator==(const GangRef&) const = default;
};

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
  std::optional<GangRef> gang;
  // The gang labels are there but malformed: the pod is placed nowhere until they are fixed.
  std::string gangProblem;
  // spec.schedulingGroup.podGroupName: the upstream PodGroup the pod belongs to ("" for none).
  std::string podGroup;
  // The pod states a preference kube-scheduler's score plugins weigh: preferred node affinity,
  // preferred pod affinity or anti-affinity, or a ScheduleAnyway topology spread constraint.
  bool statesPreferences = false;

  bool wantsNeuron() const { return count > 0; }
  std::string key() const { return namespace_ + "/" + name; }
  // The gang's key among all gangs: "ns/name", or "ns/podgroup:name" for a PodGroup (a label
  // value holds no ':', so the two never meet); "" when the pod is in neither.
  std::string gangKey() const {
    if (gang) return namespace_ + "/" + (gang->fromPodGroup ? "podgroup:" : "") + gang->name;
    return podGroup.empty() ? "" : namespace_ + "/podgroup:" + podGroup;
  }
};

// A Pod object, as kube-scheduler embeds it or the API server returns it; `path` prefixes the
// field names in errors. A pod asking for both Neuron resources is an error.
Result<PodDemand> parsePodObject(const nlohmann::json& pod, const std::string& path = "Pod");
// The node's instance-type label (the GA key, else the beta one); empty when it has neither.
std::string instanceTypeOf(const nlohmann::json& node);

}  // namespace torus::extender
