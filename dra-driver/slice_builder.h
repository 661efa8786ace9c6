// Builds the ResourceSlices (resource.k8s.io/v1) that describe one node's Neuron devices: a pure
// function of the node model, so the same input always gives the same objects and tests can
// check every attribute for every catalog type.
//
// The pool is named after the node. Devices:
//  - `neurondevice<N>` (resourceType neuron_device): a whole chip, with AWS's attribute names
//    (deviceId, instanceType, topology_x/y, topology4_id/8_id, resource.aws.com/devicegroup*_id,
//    networkNodeLayer1..3, capacityBlockId, versions) plus capacity (memory, neuronCores) and
//    resource.kubernetes.io/numaNode when known;
//  - `neuroncore<C>` (neuron_core, ours), one logical core, with its chip's attributes, when
//    core devices are on;
//  - `neuronnode` (neuron_node) on UltraServer nodes: the whole node, as AWS publishes it, with
//    or without core devices and counters.
// A node the UltraServer operator reserved for a workload carries, where taints are kept, the
// NoSchedule taint neuron.aws.com/reserved on every device from the moment the allocation is
// recorded, and the attribute workloadId once it is confirmed (Bound).
// Where counters are kept, a counter set gives each chip as many units as it has logical cores
// when core devices are on (one unit when they are off): a chip takes them all, a core one, the
// node device every chip's, so the scheduler never allocates a chip together with one of its
// cores, or the node device beside a chip. Unhealthy devices carry a taint per health dimension
// (NoSchedule by default; HealthTaints), unmonitored ones an informational taint; when the API
// does not keep taints unhealthy devices are left out of the pool instead. A device carries at
// most four taints (the API's limit before 1.35): faults first, the reservation, unmonitored.
// The attributes are device_attributes.h's, the health taints health_taints.h's; this file lays
// the devices out and packs them into slices within the API's limits.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/topology/node.h"
#include "dra-driver/health_taints.h"

namespace torus::dra {

struct SliceOptions {
  bool coreDevices = true;  // publish core partitions (only where counters are kept)
  bool counters = true;     // false: the API drops sharedCounters (DRAPartitionableDevices off)
  bool taints = true;       // false: leave unhealthy devices out instead of tainting them
  bool noneEffect = true;   // false: the API refuses the effect None (before 1.35)
  HealthTaints health;
};

struct SliceInputs {
  std::string nodeName;
  topology::Node node;
  // The Node object's labels: EC2 network topology (topology.k8s.aws/network-node-layer-N) and
  // the capacity block id are read from them when present.
  std::map<std::string, std::string> nodeLabels;
  // When each currently unhealthy device was first seen so (RFC 3339), for the taint's timeAdded.
  std::map<int, std::string> unhealthySince;
  // "namespace/name" of the NeuronUltraServerWorkload this node is reserved for ("" for none):
  // every device then carries the reserved taint.
  std::string reservedFor;
  // The same once the allocation is Bound ("" before): every device then carries it as the
  // attribute workloadId, which the workload's template selects.
  std::string workloadId;
  SliceOptions options;
};

// The slices of the pool at `generation`, each a complete object ready to create or replace
// (metadata.name is deterministic: `<node>-neuron.aws.com-<k>`, shortened with a hash when the
// node name is long).
std::vector<nlohmann::json> buildSlices(const SliceInputs& inputs, std::int64_t generation);

// The name of slice `index` of this node's pool.
std::string sliceName(const std::string& nodeName, int index);

}  // namespace torus::dra
