// AWS's UltraServer API, neuron.aws.com/v1beta1 (the CRDs of AWS's neuron-ultraserver-operator,
// so its users' manifests work unchanged): what a NeuronUltraServerWorkload asks for, the states
// its status reports, and the allocations a NeuronUltraServer's status records. The UltraServer
// operator reads the workloads (parseWorkload) and writes the allocations (allocationEntry); the
// operator, on its next pass, and the DRA driver on each node read them back (allocationsOf), so
// both act on one reading of them.
//
//   NeuronUltraServerWorkload.spec    instanceType, topologySize 1|2|4, serverCount,
//                                     allocationPolicy.failureStrategy, config.logicalNeuronCore,
//                                     resourceClaimTemplate.name
//   NeuronUltraServerWorkload.status  state (WorkloadState), allocatedUltraServers, allocatedAt,
//                                     conditions, observedGeneration
//   NeuronUltraServer.status.allocations[]  workloadRef "ns/name", allocatedNodes (leader first),
//                                     nodeCount, leaderNodeName, ultraserverIndex, allocatedAt,
//                                     phase Pending|Bound
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace torus::contracts {

inline constexpr std::string_view kUltraServerApiVersion = "neuron.aws.com/v1beta1";
inline constexpr std::string_view kUltraServerKind = "NeuronUltraServer";
inline constexpr std::string_view kWorkloadKind = "NeuronUltraServerWorkload";

// The API paths of the two kinds: a namespace's NeuronUltraServers, every namespace's workloads,
// and one workload.
std::string ultraServersPath(const std::string& nameSpace);
std::string workloadsPath();
std::string workloadPath(const std::string& nameSpace, const std::string& name);

enum class FailureStrategy { kNoOp, kRestartAll, kMigrateAffected };
const char* failureStrategyName(FailureStrategy strategy);

// A workload's status.state (AWS's enum).
enum class WorkloadState {
  kPending,
  kAllocating,
  kAllocated,
  kPartiallyAllocated,
  kFailed,
  kDeallocating
};
const char* workloadStateName(WorkloadState state);

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
  bool deleting = false;  // metadata.deletionTimestamp is set
  // Not on the object: pods made from its claim template still exist where they must be gone
  // first (a deleting workload's anywhere; an evicted one's on the nodes it gives up), as the
  // operator finds when it lists them.
  bool podsRemain = false;
  // Set when the spec cannot be served; the workload is Failed with this message.
  std::string invalid;

  std::string ref() const { return nameSpace + "/" + name; }
};

// Reads a NeuronUltraServerWorkload. Values the CRD's schema already refuses are checked again
// (the schema may be older than the controller); values it lets through but no UltraServer can
// serve (topologySize 3, an unknown failureStrategy, a "namespace/name" over the 64 characters a
// device attribute holds) make the workload invalid with a message naming the field.
Workload parseWorkload(const nlohmann::json& object);

// An allocation's phase: recorded Pending, confirmed Bound once the workload's every allocation
// is recorded. The DRA driver acts on Bound ones only.
inline constexpr const char* kAllocationBound = "Bound";
inline constexpr const char* kAllocationPending = "Pending";

// One workload's share of one UltraServer.
struct Allocation {
  std::string workloadRef;  // "namespace/name"
  std::string ultraServer;  // the NeuronUltraServer's name (its metadata, not the entry's)
  int ultraServerIndex = 0;
  std::vector<std::string> nodes;  // by node id; the first is the leader (rank 0)
  std::string phase;               // kAllocationPending, then kAllocationBound
  std::string allocatedAt;

  const std::string& leader() const { return nodes.front(); }
  bool operator==(const Allocation&) const = default;
};

// The status.allocations entry of `allocation` (which holds at least one node).
nlohmann::json allocationEntry(const Allocation& allocation);

// The allocations in a NeuronUltraServer's status; entries without a workloadRef or a node are
// skipped.
std::vector<Allocation> allocationsOf(const nlohmann::json& ultraServerObject);

}  // namespace torus::contracts
