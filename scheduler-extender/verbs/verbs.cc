#include "scheduler-extender/verbs/verbs.h"

namespace torus::extender {

FilterResult filter(const ClusterState& state, const PodDemand& pod,
                    const std::vector<std::string>& nodeNames) {
  FilterResult result;
  for (const std::string& name : nodeNames) {
    if (!pod.wantsNeuron()) {
      result.nodeNames.push_back(name);
      continue;
    }
    auto trial = state.tryPlace(name, pod, false);
    if (trial) {
      result.nodeNames.push_back(name);
    } else if (trial.error().code == ErrorCode::kResourceExhausted ||
               trial.error().code == ErrorCode::kNotFound) {
      result.failed[name] = trial.error().message;
    } else {
      result.failedAndUnresolvable[name] = trial.error().message;
    }
  }
  return result;
}

std::vector<HostPriority> prioritize(const ClusterState& state, const PodDemand& pod,
                                     const std::vector<std::string>& nodeNames) {
  std::vector<HostPriority> priorities;
  for (const std::string& name : nodeNames) {
    int score = 0;
    if (pod.wantsNeuron()) {
      if (auto trial = state.tryPlace(name, pod, true)) score = trial->score;
    }
    priorities.push_back({name, score});
  }
  return priorities;
}

Result<Allocation> bindPod(ClusterState& state, const PodDemand& pod, const std::string& node) {
  if (!pod.wantsNeuron()) {
    return makeError(ErrorCode::kFailedPrecondition,
                     "pod " + pod.key() + " asks for no Neuron resource; nothing to bind here");
  }
  return state.reserve(node, pod);
}

std::map<std::string, std::vector<std::string>> preempt(
    const ClusterState& state, const PodDemand& pod,
    const std::map<std::string, std::vector<std::string>>& victimsByNode) {
  std::map<std::string, std::vector<std::string>> accepted;
  for (const auto& [node, victims] : victimsByNode) {
    if (!pod.wantsNeuron()) {
      accepted[node] = victims;
      continue;
    }
    const auto view = state.node(node);
    if (!view) continue;
    NodeState after = *view;
    for (const std::string& uid : victims) {
      if (const auto held = state.allocationOf(uid); held && held->node == node) {
        after.freeCores |= held->cores;
      }
    }
    auto chosen =
        topology::choosePlacement(after.model, {pod.unit, pod.count, freeIds(after, pod.unit), {}});
    if (chosen) accepted[node] = victims;
  }
  return accepted;
}

}  // namespace torus::extender
