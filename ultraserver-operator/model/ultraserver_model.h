// The UltraServer operator's model: which nodes form which UltraServer. Pure: built from the
// API's JSON, no I/O, so the allocator and its tests see exactly what the controller sees. What a
// NeuronUltraServerWorkload asks for and which nodes each workload holds are the API's types
// (common/contracts/neuron_ultraserver.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/contracts/neuron_ultraserver.h"

namespace torus::ultraserver {

// One node of an UltraServer, from the labels the node agent publishes
// (common/contracts/ultraserver_labels.h).
struct MemberNode {
  std::string name;
  std::string instanceType;
  std::string serverId;  // the UltraServer's id (server-id-4)
  std::string pairId;    // its NeuronLink pair (contracts::pairOf); "" when in none
  int nodeId = -1;       // 0-3 (node-id-4)
  bool ready = false;    // the Node's Ready condition is True
  // While not Ready: the Ready condition's lastTransitionTime (RFC 3339; "" when the node has
  // none), from which a failure strategy's grace period counts.
  std::string notReadySince;
  bool schedulable = true;
  // A ResourceClaim of no workload holds devices here ("ResourceClaim ns/name"; "" when none):
  // reserving the node would leave that claim's pod running beside the workload, or, allocated in
  // the moment before the reservation's taint, refused at prepare for as long as it lasts.
  std::string busyWith;
  // That claim does not tolerate the reserved taint: it was allocated here before a reservation's
  // taint reached the node's devices (one that tolerates the taint forced its way in, and is
  // refused at prepare instead).
  bool busyBeforeTaint = false;
  // When that claim was allocated (status.allocation.allocationTimestamp, where the API server
  // sets it), else when it was made (metadata.creationTimestamp): a claim made or allocated after
  // the reservation was recorded came after it, whatever it tolerates. RFC 3339; "" if unknown.
  std::string busySince;

  bool healthy() const { return ready && schedulable; }
};

// A Node's place in an UltraServer; nullopt when it is in none (no server-id-4 / node-id-4
// labels, or labels that do not parse).
std::optional<MemberNode> memberOf(const nlohmann::json& node);

struct BusyNode {
  std::string claim;         // "ResourceClaim ns/name"
  bool beforeTaint = false;  // MemberNode::busyBeforeTaint
  std::string since;         // MemberNode::busySince
};
// The nodes where an allocated ResourceClaim of the neuron.aws.com driver that carries no
// workload annotation holds devices (admin access holds nothing), each with such a claim: one
// that does not tolerate the reserved taint when there is one.
std::map<std::string, BusyNode> nodesBusyWithClaims(
    const std::map<std::string, std::shared_ptr<const nlohmann::json>>& claims);

// The UIDs of the pods that own ResourceClaims made from `workload`'s template: claims in its
// namespace carrying its neuron.aws.com/workload annotation (only the resource-claim controller
// may write it on a claim, copying the operator's template), owned by a Pod. These, and never
// pods that merely name a template of the same name, are the workload's pods.
std::set<std::string> podsOfWorkload(
    const std::map<std::string, std::shared_ptr<const nlohmann::json>>& claims,
    const contracts::Workload& workload);

struct UltraServer {
  std::string name;  // the NeuronUltraServer object's name: "us-" + server id
  std::string serverId;
  std::string instanceType;
  std::vector<MemberNode> nodes;  // by node id
};

// Groups member nodes by server id (the nodes of one UltraServer share it); sorted by name.
std::vector<UltraServer> groupUltraServers(std::vector<MemberNode> members);
std::string ultraServerName(const std::string& serverId);

// The workload and allocation types are the API's (common/contracts/neuron_ultraserver.h).
using contracts::Allocation;
using contracts::allocationsOf;
using contracts::FailureStrategy;
using contracts::parseWorkload;
using contracts::Workload;
using contracts::WorkloadState;

}  // namespace torus::ultraserver
