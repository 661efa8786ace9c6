// SchedulingCycles: what this extender answered kube-scheduler for each pod between its filter
// and its bind.
//
// - The nodes filter passed. A bind may go only to one of them: kube-scheduler binds to a node it
//   chose among those, so a bind to any other node did not come from its scheduling cycle (anyone
//   who reaches the port can POST /bind).
// - A hold: the node and cores the extender expects the pod to take (its choice in filter or
//   prioritize). kube-scheduler starts the next pod's cycle before this pod's bind reaches us;
//   without holds the next pod sees the same free cores, packing sends it to the same node, and
//   one of the two binds is refused (a wasted cycle, a status write and a backoff). Other pods'
//   choices count the held cores as taken, so the next pod goes where there is room, and a bind
//   chooses around other pods' holds when it can. Holds never refuse anything: whether a node
//   passes filter, or a bind succeeds, does not depend on them.
//
// Bounded: at most `capacity` pods, each forgotten at its bind, at its next filter (replaced), or
// `ttl` after its filter. A forgotten pod's bind is refused and kube-scheduler schedules it again.
// Node names are kept as 64-bit hashes, so a filter over 5,000 nodes costs 40 KB.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/topology/core_set.h"
#include "scheduler-extender/state/cluster_state.h"

namespace torus::extender {

class SchedulingCycles {
 public:
  using Clock = std::chrono::steady_clock;

  struct Limits {
    std::size_t capacity = 4096;                           // pods remembered at once
    Clock::duration filterTtl = std::chrono::minutes(10);  // filter to bind, at most
    Clock::duration holdTtl = std::chrono::seconds(10);    // prioritize to bind, at most
  };
  SchedulingCycles() : SchedulingCycles(Limits{}) {}
  explicit SchedulingCycles(Limits limits) : limits_(limits) {}

  // The pod's filter answered: it may be bound to these nodes. Replaces an earlier answer (and its
  // hold): a pod filtered again is in a new cycle.
  void filtered(const std::string& podUid, const std::vector<std::string>& passedNodes,
                Clock::time_point now);
  // Why a bind of the pod to the node is not one this extender's filter allowed; "" when it is.
  std::string bindRefusal(const std::string& podUid, const std::string& podKey,
                          const std::string& node, Clock::time_point now) const;
  // The pod is expected on `node` with these cores until its bind arrives.
  void hold(const std::string& podUid, const std::string& node, topology::CoreSet cores,
            Clock::time_point now);
  // The cores held for every pod but `podUid`, by node (holds past holdTtl left out).
  HeldCores heldForOthers(const std::string& podUid, Clock::time_point now) const;
  // The same on one node: what a bind there chooses around (ClusterState::reserve).
  topology::CoreSet heldOnNodeForOthers(const std::string& podUid, const std::string& node,
                                        Clock::time_point now) const;
  // The pod's bind was answered (bound or refused): its cycle is over.
  void finished(const std::string& podUid);

  std::size_t size() const;
  // Binds refused because no filter of ours allowed them (a metric).
  std::uint64_t unfilteredBindsRefused() const;

 private:
  struct Hold {
    std::string node;
    topology::CoreSet cores;
    Clock::time_point since;
  };
  struct Cycle {
    std::vector<std::uint64_t> passed;  // sorted hashes of node names
    Clock::time_point filteredAt;
    std::optional<Hold> hold;
    std::list<std::string>::iterator age;  // its place in order_
  };

  void eraseLocked(std::unordered_map<std::string, Cycle>::iterator it);
  void dropExpiredLocked(Clock::time_point now);

  const Limits limits_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Cycle> byUid_;
  std::list<std::string> order_;  // UIDs, oldest filter first
  mutable std::uint64_t refused_ = 0;
};

}  // namespace torus::extender
