// ClusterState: the extender's view of every Neuron node — its model (from the catalog by
// instance type) and which pod holds which cores — and the one place where cores are handed out.
//
// Thread-safe: kube-scheduler calls filter and prioritize in parallel and may retry bind; reserve()
// checks and records under one lock, so concurrent binds never hand out a core twice, and a
// repeated bind of the same pod returns the set it already holds.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/base/result.h"
#include "common/contracts/kubelet_view.h"
#include "common/topology/core_set.h"
#include "common/topology/fragmentation.h"
#include "common/topology/node.h"
#include "scheduler-extender/state/pod_demand.h"

namespace torus::extender {

struct Allocation {
  std::string node;
  std::string podKey;  // namespace/name
  std::string podUid;
  topology::AllocationUnit unit;
  topology::CoreSet ids;    // core ids or device indices, as handed to the pod
  topology::CoreSet cores;  // the cores they cover
  // Decided by our bind but not yet seen on the pod through the API: held so no one else gets
  // these cores meanwhile, and dropped if the pod never shows up bound (see expireAssumptions).
  bool assumed = false;
  std::chrono::steady_clock::time_point decidedAt{};
  std::int64_t allocTimeNs = 0;  // NEURON_ALLOC_TIME, the same on every retry of one bind
  int priority = 0;              // the pod's spec.priority: who may preempt it
};

// What the node's kubelet would refuse at admission now, whatever the pods say: the ids its
// device plugin last reported Unhealthy (a fault, or held through the other resource until the
// agent has told kubelet otherwise; common/contracts/kubelet_view.h). Kubelet's refusal is final
// for a pod (UnexpectedAdmissionError), so these are never offered.
struct KubeletRefusal {
  topology::DeviceSet devices;  // as aws.amazon.com/neuron (and neurondevice)
  topology::CoreSet cores;      // as aws.amazon.com/neuroncore
  bool everything = false;      // the agent's report is unreadable: nothing is offered
  bool operator==(const KubeletRefusal&) const = default;
};
KubeletRefusal kubeletRefusalOf(const contracts::KubeletUnavailable& unhealthy);

// Cores expected to be taken soon (pods between prioritize and bind: scheduling_cycles.h), by
// node. Scoring counts them as taken; nothing else does.
using HeldCores = std::unordered_map<std::string, topology::CoreSet>;

// A node as the verbs see it: model, free cores, who holds the rest, and what kubelet refuses.
struct NodeState {
  std::string name;
  topology::Node model;
  topology::CoreSet freeCores;
  KubeletRefusal kubeletRefuses;
};

class ClusterState {
 public:
  // Adds or updates a node of a catalog instance type (lnc 0 = the type's default) with the given
  // devices out of service. Allocations on it stay unless its LNC changed (ids then mean other
  // cores), in which case they are dropped and counted in the result.
  Result<int> upsertNode(const std::string& name, const std::string& instanceType, int lnc = 0,
                         const topology::DeviceSet& unhealthy = {});
  // The same for a node as the agent described it (contracts::nodeFromTopology): its links and
  // health as discovered, so a NeuronLink that is down is routed around here as in the device
  // plugin.
  Result<int> upsertNode(const std::string& name, topology::Node model);
  // What the node's kubelet refuses now (the agent's report); false for a node we do not know.
  bool setKubeletRefusal(const std::string& name, const KubeletRefusal& refusal);
  // Forgets the node and every allocation on it; returns how many allocations went.
  int removeNode(const std::string& name);
  bool hasNode(const std::string& name) const;
  std::optional<NodeState> node(const std::string& name) const;
  std::vector<std::string> nodeNames() const;

  // What placing the pod on the node would give, without recording it: the ids, and a 0..10
  // score (best fit: fuller nodes and larger free shapes left score higher). Errors say why the
  // node cannot take the pod: InvalidArgument = never (shape), ResourceExhausted = not now,
  // NotFound = not a Neuron node we know.
  struct Trial {
    topology::CoreSet ids;
    int score = 0;
    topology::CoreSet cores;  // the cores the ids cover (withScore only)
  };
  Result<Trial> tryPlace(const std::string& node, const PodDemand& pod, bool withScore) const;
  // tryPlaceMany's answer: a trial per node asked about, in order; nodes alike share one.
  class Trials {
   public:
    const Result<Trial>& operator[](std::size_t i) const { return *byNode_[i]; }
    std::size_t size() const { return byNode_.size(); }

   private:
    friend class ClusterState;
    std::deque<Result<Trial>> distinct_;  // a deque: the pointers below stay valid as it grows
    std::vector<const Result<Trial>*> byNode_;
  };
  // tryPlace for many nodes under one lock. Nodes of the same type with the same free ids get
  // the same answer, so each distinct (type, LNC, health, free ids) is computed once per call —
  // in a large cluster most nodes are empty or full, so 5,000 nodes cost a handful of placements.
  // `held`: cores to count as taken besides the allocations (prioritize's holds).
  Trials tryPlaceMany(const std::vector<std::string>& nodes, const PodDemand& pod, bool withScore,
                      const HeldCores* held = nullptr) const;

  // Chooses and records a placement for the pod on the node, or returns the one it already has.
  // The choice keeps clear of `avoid` (cores held for other pods whose binds are on their way)
  // when the pod fits without them, and takes them only when it does not.
  Result<Allocation> reserve(const std::string& node, const PodDemand& pod,
                             const topology::CoreSet& avoid = {});
  // A group of pods placed together on some of `nodes`, without recording it: each pod in turn
  // (in the order given) on the node that scores best for it, counting the pods placed before
  // it. ResourceExhausted when not all fit (saying how many would). freeCoresLeft: the nodes' free
  // cores afterwards. quickReject: fail at once, without placing, when the nodes have fewer free
  // cores than the pods need together (the message then says only that).
  struct GroupPlacement {
    std::vector<std::string> nodes;  // the node of each pod, in order
    int freeCoresLeft = 0;
  };
  Result<GroupPlacement> placeGroup(const std::vector<std::string>& nodes,
                                    const std::vector<PodDemand>& pods,
                                    bool quickReject = false) const;
  // Moves the pod's reservation that no bind has confirmed yet (Allocation::assumed) to `node`,
  // choosing there as reserve() does, under one lock: the pod holds one place or the other, never
  // both or neither. NotFound when it holds nothing, FailedPrecondition when its place is
  // confirmed, and where it does not fit on `node` that error (the reservation stays).
  Result<Allocation> moveReservation(const PodDemand& pod, const std::string& node);
  // reserve() for each pod on its node, under one lock: all or none (a pod that already held a
  // placement on its node keeps it either way).
  Result<void> reserveGroup(const std::vector<PodDemand>& pods,
                            const std::vector<std::string>& nodes);
  // Records an allocation decided elsewhere (a pod's AWS_NEURON_IDS annotation, another policy):
  // the ids must exist on the node and be free.
  Result<Allocation> record(const std::string& node, const PodDemand& pod,
                            const topology::CoreSet& ids);
  // What the API says the pod holds (bound to `node` with these ids): confirms an assumption
  // that matches, replaces one that does not, records it otherwise. When the ids are held by
  // another pod (kAborted), the pod keeps what it held before.
  Result<Allocation> observe(const std::string& node, const PodDemand& pod,
                             const topology::CoreSet& ids);
  // observe() for several pods at once, all or none: pods kubelet gave each other's ids, each
  // refused alone while the other holds what it wants.
  struct Observation {
    std::string node;
    PodDemand pod;
    topology::CoreSet ids;
  };
  Result<void> observeTogether(const std::vector<Observation>& observations);
  // Drops assumptions older than `ttl` (the bind never reached the API, or the pod went while we
  // were not watching) and returns them.
  std::vector<Allocation> expireAssumptions(std::chrono::steady_clock::time_point now,
                                            std::chrono::steady_clock::duration ttl);
  // After a full re-list: drops confirmed allocations of pods no longer listed (assumptions are
  // kept; they expire on their own). Returns how many went.
  int retainObserved(const std::vector<std::string>& podUids);
  // Frees what the pod holds (pod deleted or finished); false when it held nothing.
  bool release(const std::string& podUid);
  std::optional<Allocation> allocationOf(const std::string& podUid) const;
  std::vector<Allocation> allocationsOn(const std::string& node) const;  // a pass over all
  // Every node's allocations in one pass: for callers that look at many nodes (preemption over a
  // full cluster), where allocationsOn per node would cost nodes x allocations.
  std::unordered_map<std::string, std::vector<Allocation>> allocationsByNode() const;
  std::vector<Allocation> allocations() const;  // all, by pod UID

 private:
  struct NodeEntry {
    topology::Node model;
    std::shared_ptr<const topology::ShapeCatalog> shapes;
    topology::CoreSet healthyCores;  // cached: every filter looks at it for every node
    topology::CoreSet usedCores;
    // Every device's NeuronLink neighbours, as text, interned (linksTexts_): nodes of one type
    // place alike only when their links are alike (a link down on one of them), and alike links
    // are the same pointer, so telling them apart costs no string work per node and filter.
    const std::string* links = nullptr;
    KubeletRefusal kubeletRefuses;
  };

  Result<Allocation> reserveLocked(const std::string& node, const PodDemand& pod,
                                   const topology::CoreSet& avoid = {});
  Result<Allocation> recordLocked(const std::string& node, const PodDemand& pod,
                                  const topology::CoreSet& ids);
  void releaseLocked(std::map<std::string, Allocation>::iterator it);
  Result<void> replaceLocked(const std::vector<Observation>& observations);
  int dropAllocationsLocked(const std::string& node);
  // `usedNow`: the node's used cores as they would be (a group being placed), else entry.usedCores.
  Result<Trial> tryPlaceLocked(const NodeEntry& entry, const PodDemand& pod, bool withScore,
                               const topology::CoreSet* usedNow = nullptr) const;

  // The distinct links texts of every node seen; a handful (a type's, and those with a link
  // down), so never pruned.
  const std::string* internLinksLocked(std::string text);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, NodeEntry> nodes_;
  std::unordered_set<std::string> linksTexts_;
  std::map<std::string, Allocation> allocations_;  // by pod UID
};

// Ids of `unit` free on the node (whole free devices, or free cores) that its kubelet admits.
topology::CoreSet freeIds(const NodeState& node, topology::AllocationUnit unit);

}  // namespace torus::extender
