#include "scheduler-extender/verbs/gang_verbs.h"

#include <algorithm>
#include <optional>
#include <set>

#include "common/base/log.h"
#include "common/contracts/neuron_names.h"
#include "common/metrics/event_counters.h"
#include "scheduler-extender/gang/gang_planner.h"

namespace torus::extender {
namespace {

void count(const char* outcome) {
  metrics::processCounters().add(metrics::names::kGangFiltersTotal, {{"outcome", outcome}});
}

// Every node fails with the same reason, so kube-scheduler's event reads "N nodes: <reason>".
FilterResult failEverywhere(const std::vector<std::string>& nodeNames, const std::string& why,
                            bool unresolvable = false) {
  FilterResult result;
  for (const std::string& node : nodeNames)
    (unresolvable ? result.failedAndUnresolvable : result.failed)[node] = why;
  return result;
}

// "Not yet, and no cluster event will say when": answered as an error, which kube-scheduler
// retries after its backoff (at most 10 s). An Unschedulable answer would park the pod until an
// event its other rejecting plugins care about, which a member's nomination is not.
FilterResult retryLater(const std::string& why) {
  FilterResult result;
  result.error = why;
  return result;
}

FilterResult onlyOn(const std::vector<std::string>& nodeNames, const std::string& node,
                    const std::string& gang) {
  FilterResult result;
  for (const std::string& name : nodeNames) {
    if (name == node) {
      result.nodeNames.push_back(name);
    } else {
      result.failed[name] = gang + " placed this pod on " + node;
    }
  }
  return result;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Where the gang's other members are: bound, or reserved by its plan.
std::vector<std::string> otherMembersNodes(const ClusterState& state,
                                           const std::vector<GangMember>& members,
                                           const std::string& podUid) {
  std::vector<std::string> nodes;
  for (const GangMember& member : members) {
    if (member.demand.uid == podUid) continue;
    if (!member.node.empty()) {
      nodes.push_back(member.node);
    } else if (const auto held = state.allocationOf(member.demand.uid)) {
      nodes.push_back(held->node);
    }
  }
  return nodes;
}

// On a large cluster kube-scheduler offers each cycle a sample of the feasible nodes, a different
// one each time, so a member's planned node may not come round for many cycles. The member moves
// instead to the offered node that fits it best in the tightest domain it shares with the rest of
// its gang (any offered node where they share none): the gang keeps its shape. Returns the node,
// or "" when none fits there.
std::string moveToOfferedNode(ClusterState& state, const NodeDomainIndex& domains,
                              const PodDemand& pod, const std::string& planned,
                              const std::vector<std::string>& others,
                              const std::vector<std::string>& offered) {
  const NodeDomains mine = domains.of(planned);
  std::optional<std::size_t> shared;
  for (std::size_t level = 0; level < kDomainLevels && !shared; ++level) {
    const std::string& domain = mine.levels[level];
    if (!domain.empty() && std::all_of(others.begin(), others.end(), [&](const std::string& node) {
          return domains.of(node).levels[level] == domain;
        })) {
      shared = level;
    }
  }
  std::vector<std::string> candidates;
  for (const std::string& node : offered) {
    if (!shared || domains.of(node).levels[*shared] == mine.levels[*shared])
      candidates.push_back(node);
  }
  if (candidates.empty()) return "";
  const auto best = state.placeGroup(candidates, {pod}, true);
  if (!best) return "";
  const auto moved = state.moveReservation(pod, best->nodes.front());
  return moved ? moved->node : "";
}

// filterGangMember's answer (which records a member it turns away).
FilterResult placeMember(ClusterState& state, const Gangs& gangs, const PodDemand& pod,
                         const std::vector<std::string>& nodeNames) {
  if (!pod.gang) {
    count("invalid");
    return failEverywhere(nodeNames, "gang labels: " + pod.gangProblem, true);
  }
  const std::string key = pod.gangKey();
  // As people name it: "gang ml/train", or "PodGroup ml/train".
  const std::string gang =
      (pod.gang->fromPodGroup ? "PodGroup " : "gang ") + pod.namespace_ + "/" + pod.gang->name;
  const int size = pod.gang->size;
  if (const auto held = state.allocationOf(pod.uid)) {
    if (contains(nodeNames, held->node)) {
      count("on_its_node");
      return onlyOn(nodeNames, held->node, gang);
    }
    const std::vector<GangMember> members = gangs.members.of(key);
    const auto self = std::find_if(members.begin(), members.end(), [&](const GangMember& member) {
      return member.demand.uid == pod.uid;
    });
    if (held->assumed && self != members.end()) {  // what it asks for as the API lists it
      const std::string moved =
          moveToOfferedNode(state, gangs.domains, self->demand, held->node,
                            otherMembersNodes(state, members, pod.uid), nodeNames);
      if (!moved.empty()) {
        count("moved");
        TORUS_LOG(Info, Extender, "gang member moved to an offered node", {"gang", gang},
                  {"pod", pod.key()}, {"planned", held->node}, {"node", moved});
        return onlyOn(nodeNames, moved, gang);
      }
    }
    count("node_not_offered");
    return retryLater(gang + " placed this pod on " + held->node +
                      ", which kube-scheduler's own checks did not offer this time; the pod "
                      "waits for that node");
  }
  if (gangs.trustRequests) gangs.members.apply(pod, "", false);
  const std::vector<GangMember> members = gangs.members.of(key);
  const bool listed = std::any_of(members.begin(), members.end(), [&](const GangMember& member) {
    return member.demand.uid == pod.uid;
  });
  if (!listed) {
    count("incomplete");
    return retryLater(gang + ": pod " + pod.name +
                      " is not listed by the API yet; it is tried again");
  }
  for (const GangMember& member : members) {
    if (!pod.gang->fromPodGroup && member.demand.gang && member.demand.gang->size != size) {
      count("invalid");
      return failEverywhere(
          nodeNames,
          gang + ": pod " + pod.name + " says " + std::to_string(size) + " pods, pod " +
              member.demand.name + " says " + std::to_string(member.demand.gang->size) +
              "; give every pod of the gang the same " + contracts::kGangSizeLabel,
          true);
    }
  }
  const int existing = static_cast<int>(members.size());
  if (existing < size) {
    count("incomplete");
    return retryLater(gang + " has " + std::to_string(existing) + " of its " +
                      std::to_string(size) + " pods; none is placed until all exist");
  }
  if (existing > size && !pod.gang->fromPodGroup) {  // a PodGroup's minCount is a minimum
    count("invalid");
    return failEverywhere(nodeNames, gang + " has " + std::to_string(existing) + " pods but " +
                                         contracts::kGangSizeLabel + " says " +
                                         std::to_string(size) +
                                         "; none is placed until they agree");
  }
  std::vector<std::string> placedNodes;
  std::vector<PodDemand> unplaced;
  for (const GangMember& member : members) {
    if (!member.node.empty()) {
      placedNodes.push_back(member.node);
    } else if (const auto held = state.allocationOf(member.demand.uid)) {
      placedNodes.push_back(held->node);
    } else if (member.demand.wantsNeuron()) {
      unplaced.push_back(member.demand);  // members without Neuron asks are kube-scheduler's
    }
  }
  auto plan = planGang(state, gangs.domains, std::move(unplaced), placedNodes, nodeNames);
  if (!plan) {
    count("not_whole");
    return failEverywhere(nodeNames, gang + " (" + std::to_string(size) +
                                         " pods) does not fit whole: " + plan.error().message +
                                         "; none is placed and nothing is held");
  }
  auto reserved = state.reserveGroup(plan->pods, plan->nodes);
  if (!reserved) {
    count("raced");
    // Another filter of the gang (or of another gang) reserved first: say so as an error, which
    // kube-scheduler retries after its backoff whatever else happens.
    return retryLater(gang + " changed while being placed (" + reserved.error().message +
                      "); it is tried again");
  }
  // Members kube-scheduler turned away before wait in its backoff: a nomination brings them back
  // at once, and their cycle tries that node first. The others come in their turn (they were
  // never tried) and would mostly be there before a nomination is written: none is sent.
  std::set<std::string> turnedAway;
  for (const GangMember& member : members) {
    if (member.turnedAway) turnedAway.insert(member.demand.uid);
  }
  std::string mine;
  std::string placements;
  for (std::size_t i = 0; i < plan->pods.size(); ++i) {
    placements += (placements.empty() ? "" : ", ") + plan->pods[i].name + "@" + plan->nodes[i];
    if (plan->pods[i].uid == pod.uid) {
      mine = plan->nodes[i];
    } else if (gangs.nominator != nullptr && turnedAway.count(plan->pods[i].uid) != 0) {
      gangs.nominator->nominate(plan->pods[i], plan->nodes[i]);
    }
  }
  if (mine.empty()) {
    // Not reachable through the routes (they send only Neuron pods here); said, not assumed.
    return failEverywhere(
        nodeNames, gang + ": pod " + pod.name + " asks for no Neuron resource the extender places");
  }
  count("placed");
  TORUS_LOG(Info, Extender, "gang placed", {"gang", gang}, {"where", plan->where},
            {"pods", placements});
  return onlyOn(nodeNames, mine, gang);
}

}  // namespace

FilterResult filterGangMember(ClusterState& state, const Gangs& gangs, const PodDemand& pod,
                              const std::vector<std::string>& nodeNames) {
  FilterResult result = placeMember(state, gangs, pod, nodeNames);
  if (result.nodeNames.empty()) gangs.members.markTurnedAway(pod.uid);
  return result;
}

std::vector<HostPriority> prioritizeGangMember(const ClusterState& state, const PodDemand& pod,
                                               const std::vector<std::string>& nodeNames) {
  const auto held = state.allocationOf(pod.uid);
  std::vector<HostPriority> priorities;
  for (const std::string& name : nodeNames)
    priorities.push_back({name, held && held->node == name ? 10 : 0});
  return priorities;
}

}  // namespace torus::extender
