#include "scheduler-extender/verbs/verbs.h"

#include <algorithm>

#include "scheduler-extender/verbs/victims.h"

namespace torus::extender {

namespace {

// A node's trial in filter's terms: it passes, or fails for now ("not now": no room, unknown
// node) or for good ("never on this node type").
void sortTrial(const std::string& name, const Result<ClusterState::Trial>& trial,
               FilterResult& result) {
  if (trial) {
    result.nodeNames.push_back(name);
  } else if (trial.error().code == ErrorCode::kResourceExhausted ||
             trial.error().code == ErrorCode::kNotFound) {
    result.failed[name] = trial.error().message;
  } else {
    result.failedAndUnresolvable[name] = trial.error().message;
  }
}

}  // namespace

FilterResult filter(const ClusterState& state, const PodDemand& pod,
                    const std::vector<std::string>& nodeNames) {
  FilterResult result;
  if (!pod.wantsNeuron()) {
    result.nodeNames = nodeNames;
    return result;
  }
  const auto trials = state.tryPlaceMany(nodeNames, pod, false);
  for (std::size_t i = 0; i < nodeNames.size(); ++i)
    sortTrial(nodeNames[i], trials[i], result);
  return result;
}

FilterResult filterChoosing(const ClusterState& state, const PodDemand& pod,
                            const std::vector<std::string>& nodeNames, const HeldCores& held,
                            std::optional<ExpectedPlacement>& best) {
  best.reset();
  if (!pod.wantsNeuron()) return filter(state, pod, nodeNames);
  const auto trials = state.tryPlaceMany(nodeNames, pod, true, &held);
  FilterResult result;
  int bestScore = -1;
  for (std::size_t i = 0; i < nodeNames.size(); ++i) {
    const auto& trial = trials[i];
    if (!trial) {
      sortTrial(nodeNames[i], trial, result);
    } else if (trial->score > bestScore) {  // the first of equals, as prioritize's choice
      bestScore = trial->score;
      best = ExpectedPlacement{nodeNames[i], trial->cores};
    }
  }
  if (!best) return filter(state, pod, nodeNames);
  result.nodeNames = {best->node};
  return result;
}

std::vector<HostPriority> prioritize(const ClusterState& state, const PodDemand& pod,
                                     const std::vector<std::string>& nodeNames,
                                     const HeldCores* held, ExpectedPlacement* best) {
  std::vector<HostPriority> priorities;
  if (!pod.wantsNeuron()) {
    for (const std::string& name : nodeNames)
      priorities.push_back({name, 0});
    return priorities;
  }
  const auto trials = state.tryPlaceMany(nodeNames, pod, true, held);
  int bestScore = -1;
  std::size_t bestIndex = 0;
  for (std::size_t i = 0; i < nodeNames.size(); ++i) {
    priorities.push_back({nodeNames[i], trials[i] ? trials[i]->score : 0});
    if (best != nullptr && trials[i] && trials[i]->score > bestScore) {
      bestScore = trials[i]->score;
      bestIndex = i;
      *best = {nodeNames[i], trials[i]->cores};
    }
  }
  if (bestScore < 0) return priorities;
  // The expected node alone keeps the top score: kube-scheduler breaks ties at random, and a pod
  // that lands on another of the tied nodes would bind where nothing is held for it. (The
  // extender's score times its weight outweighs the in-tree scores of otherwise equal nodes.)
  priorities[bestIndex].score = std::max(priorities[bestIndex].score, 1);
  for (std::size_t i = 0; i < priorities.size(); ++i) {
    if (i != bestIndex && priorities[i].score >= priorities[bestIndex].score) {
      priorities[i].score = priorities[bestIndex].score - 1;
    }
  }
  return priorities;
}

Result<Allocation> bindPod(ClusterState& state, const PodDemand& pod, const std::string& node,
                           PodBinder* binder, std::optional<int> ultraServerNodes,
                           const topology::CoreSet& heldForOthers) {
  if (!pod.wantsNeuron()) {
    return makeError(ErrorCode::kFailedPrecondition,
                     "pod " + pod.key() + " asks for no Neuron resource; nothing to bind here");
  }
  auto allocation = state.reserve(node, pod, heldForOthers);
  if (!allocation || binder == nullptr) return allocation;
  if (auto handedOff = binder->bind(pod, *allocation, ultraServerNodes); !handedOff) {
    // Only a decision not yet seen on the pod is ours to take back.
    if (allocation->assumed) state.release(pod.uid);
    return std::move(handedOff).error();
  }
  return allocation;
}

std::map<std::string, std::vector<std::string>> preempt(
    const ClusterState& state, const PodDemand& pod,
    const std::map<std::string, std::vector<std::string>>& victimsByNode) {
  if (!pod.wantsNeuron()) return victimsByNode;
  // kube-scheduler proposes victims on every candidate node of an unschedulable pod: one pass
  // over the allocations, not one per node.
  auto heldByNode = state.allocationsByNode();  // a node holding nothing reads as empty
  std::map<std::string, std::vector<std::string>> accepted;
  for (const auto& [node, victims] : victimsByNode) {
    const auto view = state.node(node);
    if (!view) continue;
    if (auto chosen = chooseVictims(*view, heldByNode[node], pod, victims)) {
      accepted[node] = std::move(*chosen);
    }
  }
  return accepted;
}

}  // namespace torus::extender
