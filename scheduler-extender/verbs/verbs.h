// The extender's verbs as pure functions of a ClusterState: filter, prioritize, bind, preempt.
// The HTTP layer parses, calls one of these and serialises; nothing here knows about JSON.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/verbs/pod_binder.h"

namespace torus::extender {

struct FilterResult {
  std::vector<std::string> nodeNames;
  std::map<std::string, std::string> failed;
  std::map<std::string, std::string> failedAndUnresolvable;
  std::string error;
};

struct HostPriority {
  std::string host;
  int score = 0;  // 0..10
};

// Nodes where a valid set exists now pass; "never on this node type" (an unsupported shape, more
// than the node has) is FailedAndUnresolvable so preemption does not try; "not now" is Failed.
FilterResult filter(const ClusterState& state, const PodDemand& pod,
                    const std::vector<std::string>& nodeNames);

// Where the pod is expected to go: the node scored highest and the cores it would take there.
struct ExpectedPlacement {
  std::string node;
  topology::CoreSet cores;
};

// Filter for a pod whose node the extender chooses, in one scoring pass with `held` (other pods'
// expected placements) counted as taken: the node prioritize would score highest passes alone
// and `best` says where and on which cores. When nothing fits around the holds, `best` stays
// empty and the result is filter's (holds ignored), so kube-scheduler still sees every fit.
FilterResult filterChoosing(const ClusterState& state, const PodDemand& pod,
                            const std::vector<std::string>& nodeNames, const HeldCores& held,
                            std::optional<ExpectedPlacement>& best);

// Scores count `held` (other pods' expected placements) as taken, so pods whose binds have not
// arrived yet are not placed on top of; `best`, when given, is set to the highest-scored node
// (left empty when no node fits).
std::vector<HostPriority> prioritize(const ClusterState& state, const PodDemand& pod,
                                     const std::vector<std::string>& nodeNames,
                                     const HeldCores* held = nullptr,
                                     ExpectedPlacement* best = nullptr);

// Picks and records the exact ids (around `heldForOthers` when the pod fits without them:
// ClusterState::reserve) and hands them to `binder` (when there is one), with `ultraServerNodes`
// for a gang's pod (PodBinder::bind); idempotent for a retried bind of the same pod and node. A
// failed hand-off gives the ids back.
Result<Allocation> bindPod(ClusterState& state, const PodDemand& pod, const std::string& node,
                           PodBinder* binder = nullptr,
                           std::optional<int> ultraServerNodes = std::nullopt,
                           const topology::CoreSet& heldForOthers = {});

// Per node, the victims whose eviction frees a valid set for the pod (chooseVictims: kube-
// scheduler's own when they do, a minimal set of lower-priority pods otherwise); nodes where no
// such set exists are left out.
std::map<std::string, std::vector<std::string>> preempt(
    const ClusterState& state, const PodDemand& pod,
    const std::map<std::string, std::vector<std::string>>& victimsByNode);

}  // namespace torus::extender
