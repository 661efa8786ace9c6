// The allocator: which nodes each NeuronUltraServerWorkload holds, decided from the UltraServers
// as they are now, the workloads, and the allocations already recorded in the NeuronUltraServer
// objects (the operator keeps no state of its own, so a restarted or new leader carries on).
//
// Rules:
//  - A workload holds `serverCount` allocations, each `topologySize` nodes of one UltraServer of
//    its instance type: all four nodes, a NeuronLink pair (the nodes sharing server-id-2), or one
//    node. Only Ready, schedulable nodes that no other workload holds are taken.
//  - All or nothing: a workload gets all its UltraServers in one pass or none, so no device is
//    held for a job that cannot start whole. New allocations are recorded Pending and confirmed
//    Bound on the next pass once every one is recorded; the driver acts only on Bound ones, and a
//    pass that finds a workload's allocations incomplete (a writer that died half-way) drops the
//    Pending ones and starts again.
//  - Oldest workload first (creation time, then name). A workload that does not fit does not
//    stop a smaller one behind it from fitting (no head-of-line blocking; a large workload can
//    wait long on a busy cluster; the Pending message says what it waits for).
//  - Best fit: among UltraServers that can host an allocation, the one left with the fewest free
//    nodes, so whole UltraServers stay whole for 4-node workloads.
//  - A node of a held allocation that has not been Ready for the failure grace period (or is
//    gone; a cordon alone moves nothing, and a kubelet restart shorter than the grace neither):
//      NoOp            keep everything; the workload is reported Degraded;
//      RestartAll      release every allocation and restart all the workload's pods; it is
//                      allocated again, whole, when UltraServers allow;
//      MigrateAffected move only the allocations with a failed node (the NeuronLink group is the
//                      unit that can move) to free nodes, restarting only their pods; until a
//                      place is free the workload is PartiallyAllocated and keeps the rest.
//  - Pods first: what a workload gives up (RestartAll, MigrateAffected, InvalidSpec,
//    ReservationTaken, a changed spec) while its pods still run there goes to nobody else. The
//    operator lists the pods of a workload the plan takes nodes from and, when some still run on
//    them, sets Workload::podsRemain (as for a deleting workload) and plans again: the allocations
//    it gives up stay recorded as its own, Pending (the driver publishes the reserved taint but not
//    the workload's id, so its new pods wait instead of landing there), its status says
//    PodsTerminating, and it is not placed anew until a pass finds them gone.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ultraserver-operator/model/ultraserver_model.h"

namespace torus::ultraserver {

struct WorkloadOutcome {
  WorkloadState state = WorkloadState::kPending;
  std::string reason;   // CamelCase, for the conditions
  std::string message;  // for people: what it holds or waits for
  bool degraded = false;
  std::string degradedReason;
  std::string degradedMessage;
  std::vector<std::string> allocatedUltraServers;  // by ultraserverIndex
  std::string allocatedAt;
  // The pods of this workload on these nodes must be deleted (their controllers make new ones,
  // which the scheduler places on the workload's nodes as they are now).
  std::vector<std::string> restartPodsOn;
  bool restartAllPods = false;
};

struct AllocationPlan {
  std::vector<Allocation> allocations;              // every allocation, every UltraServer
  std::map<std::string, WorkloadOutcome> outcomes;  // by workload ref
  // When the first grace period still running ends: the next pass is due then, whatever the
  // watches say (nullopt when none runs).
  std::optional<std::chrono::seconds> recheckIn;
};

// `now` (RFC 3339) stamps new allocations and is when grace periods are measured from the nodes'
// Ready transitions. `failureGrace` 0 acts on the first pass that sees a node not Ready.
AllocationPlan planAllocations(const std::vector<UltraServer>& servers,
                               const std::vector<Workload>& workloads,
                               const std::vector<Allocation>& current, const std::string& now,
                               std::chrono::seconds failureGrace = std::chrono::seconds(0));

}  // namespace torus::ultraserver
