// The UltraServer operator's model: which nodes form which UltraServer, what a
// NeuronUltraServerWorkload asks for, and which nodes each workload holds. Pure: built from the
// API's JSON, no I/O, so the allocator and its tests see exactly what the controller sees.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"

namespace torus::ultraserver {

// One node of an UltraServer, from the labels the node agent publishes (AWS's names).
struct MemberNode {
  std::string name;
  std::string instanceType;
  std::string serverId;  // neuron.amazonaws.com/ultraserver-server-id-4
  std::string pairId;    // neuron.amazonaws.com/ultraserver-server-id-2 ("" when unknown)
  int nodeId = -1;       // neuron.amazonaws.com/ultraserver-node-id-4, 0-3
  bool ready = false;    // the Node's Ready condition is True
  bool schedulable = true;

  bool healthy() const { return ready && schedulable; }
};

// A Node's place in an UltraServer; nullopt when it is in none (no server-id-4 / node-id-4
// labels, or labels that do not parse).
std::optional<MemberNode> memberOf(const nlohmann::json& node);

struct UltraServer {
  std::string name;  // the NeuronUltraServer object's name: "us-" + server id
  std::string serverId;
  std::string instanceType;
  std::vector<MemberNode> nodes;  // by node id
};

// Groups member nodes by server id (the nodes of one UltraServer share it); sorted by name.
std::vector<UltraServer> groupUltraServers(std::vector<MemberNode> members);
std::string ultraServerName(const std::string& serverId);

enum class FailureStrategy { kNoOp, kRestartAll, kMigrateAffected };
const char* failureStrategyName(FailureStrategy strategy);

struct Workload {
  std::string nameSpace;
  std::string name;
  std::string uid;
  std::string createdAt;  // metadata.creationTimestamp: the queue's order
  std::int64_t generation = 0;
  std::string instanceType;
  int topologySize = 0;
  int serverCount = 0;
  FailureStrategy strategy = FailureStrategy::kNoOp;
  std::string claimTemplate;  // the ResourceClaimTemplate to write (default: the workload's name)
  int logicalNeuronCore = 2;
  bool deleting = false;    // metadata.deletionTimestamp is set
  bool podsRemain = false;  // (deleting only) pods made from its claim template still exist
  // Set when the spec cannot be served; the workload is Failed with this message.
  std::string invalid;

  std::string ref() const { return nameSpace + "/" + name; }
};

// Reads a NeuronUltraServerWorkload. Values the CRD's schema already refuses are checked again
// (the schema may be older than the controller); values it lets through but no UltraServer can
// serve (topologySize 3, an unknown failureStrategy, a "namespace/name" over the 64 characters a
// device attribute holds) make the workload invalid with a message naming the field.
Workload parseWorkload(const nlohmann::json& object);

// One workload's share of one UltraServer, as NeuronUltraServer.status.allocations holds it.
struct Allocation {
  std::string workloadRef;  // "namespace/name"
  std::string ultraServer;
  int ultraServerIndex = 0;
  std::vector<std::string> nodes;  // by node id; the first is the leader (rank 0)
  std::string phase;               // kAllocationPending, then kAllocationBound
  std::string allocatedAt;

  const std::string& leader() const { return nodes.front(); }
  bool operator==(const Allocation&) const = default;
};

// The allocations in a NeuronUltraServer's status; entries that lack a field are skipped.
std::vector<Allocation> allocationsOf(const nlohmann::json& ultraServerObject);

}  // namespace torus::ultraserver
