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
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/topology/node.h"

namespace torus::dra {

// How device health becomes taints (docs/dra.md, "Health taints"): one key per health dimension
// (topology::dimensionName: hardware-error, ecc-uncorrected, device-lost, recovery, deep-check)
// with the fault's code as the value and `effect`, and one for a device whose health the agent
// cannot watch ("unmonitored", no value, `unmonitoredEffect`).
struct HealthTaints {
  std::map<std::string, std::string> keys;  // dimension or "unmonitored" -> key; missing: default
  std::string effect = "NoSchedule";        // of a fault: one of kTaintEffects
  std::string unmonitoredEffect = "None";   // one of kTaintEffects, or "" for no such taint
  // The single neuron.aws.com/unhealthy=<kind> taint of earlier releases instead (kept for one
  // release, so tolerations written for it go on working while they are migrated).
  bool legacy = false;

  // The key of `dimension` ("unmonitored" too): the configured one, else neuron.aws.com/<it>.
  std::string keyOf(std::string_view dimension) const;
};

// The dimensions HealthTaints::keys may name.
inline constexpr std::string_view kUnmonitoredDimension = "unmonitored";
bool isHealthTaintDimension(std::string_view name);
// "hardware-error=aws.amazon.com/hw-error,unmonitored=example.com/unwatched" as keys by dimension;
// errors name an unknown dimension or a key that is not a qualified name with a domain.
Result<std::map<std::string, std::string>> parseHealthTaintKeys(std::string_view text);

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

// The value of the legacy taint neuron.aws.com/unhealthy: a label-style word for the kind of the
// device's first fault ("UncorrectedECC", "KernelHardwareError", "ResetFailed",
// "DeviceNodeMissing", "DeepCheckFailed", "DiscoveryFailed"; while it waits for its reset and
// self-test "Recovering", then "SelfTestFailed" or "ResetFailed" after a failed attempt).
std::string legacyFaultKind(const topology::DeviceHealth& health);

// The semantic version published as draDriverVersion ("0.1.0").
std::string driverSemver();

// The id shared by the devices of one NeuronLink-connected group of `size` (1, 4, 8, 16) that
// `device` belongs to, or "" when it is in no whole, connected group of that size.
std::string deviceGroupId(const std::string& nodeName, const topology::Node& node, int device,
                          int size);

}  // namespace torus::dra
