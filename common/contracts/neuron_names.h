// The names other software depends on, in one place: the extended resources kubelet advertises,
// the container environment the Neuron runtime reads, the extender -> device plugin hand-off on
// pods (AWS's keys, so AWS's plugin and HAMi read ours and we read theirs), the labels and the
// annotation the agent publishes on its Node, and the DRA driver's name. Renaming any of these
// breaks someone else's pod specs, selectors or tools; tests/unit/contracts holds the writers and
// readers of each to one another.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace torus::contracts {

// ---- extended resources (device plugin); same names and counts as AWS's plugin ----
inline constexpr std::string_view kResourcePrefix = "aws.amazon.com/";
inline constexpr std::string_view kNeuronCoreResource = "aws.amazon.com/neuroncore";  // 1 core
inline constexpr std::string_view kNeuronResource = "aws.amazon.com/neuron";          // 1 chip
// Legacy alias of kNeuronResource (AWS dropped it in Neuron 2.22); opt-in.
inline constexpr std::string_view kNeuronDeviceResource = "aws.amazon.com/neurondevice";
inline constexpr std::array<std::string_view, 3> kResourceNames = {
    kNeuronCoreResource, kNeuronResource, kNeuronDeviceResource};

// ---- container environment, read by the Neuron runtime ----
inline constexpr std::string_view kVisibleCoresEnv = "NEURON_RT_VISIBLE_CORES";  // "0-3" or "4,6"
inline constexpr std::string_view kLogicalNcConfigEnv = "NEURON_LOGICAL_NC_CONFIG";  // "1" | "2"
inline constexpr std::string_view kUltraServerModeEnv = "NEURON_RT_ULTRASERVER_MODE";
inline constexpr std::string_view kUltraServerServerIdEnv = "NEURON_RT_ULTRASERVER_SERVER_ID";
inline constexpr std::string_view kUltraServerNodeIdEnv = "NEURON_RT_ULTRASERVER_NODE_ID";

// ---- pod annotations of the hand-off (neuron_handoff.h reads and writes them) ----
inline constexpr const char* kNeuronIdsAnnotation = "AWS_NEURON_IDS";     // "0,1,2,3"
inline constexpr const char* kAllocTimeAnnotation = "NEURON_ALLOC_TIME";  // ns since the epoch
inline constexpr const char* kAllocatedAnnotation = "NEURON_ALLOCATED";   // "false", then "true"
inline constexpr const char* kResourceTypeAnnotation = "NEURON_RESOURCE_TYPE";
// Torus's own: "4", "2" or "1" on a gang member that holds a whole node of one UltraServer job.
inline constexpr const char* kUltraServerNodesAnnotation = "torus.dev/ultraserver-nodes";

// ---- Node metadata: what the agent publishes, what the extender and operators read ----
// Every key under this prefix is the agent's, except the operator's kNeuronModeLabel,
// kCoreDevicesLabel and kNeuronNodeLabel.
inline constexpr const char* kTorusPrefix = "torus.dev/";
inline constexpr const char* kTopologyAnnotation = "torus.dev/topology";
inline constexpr const char* kLncLabel = "torus.dev/lnc";
inline constexpr const char* kTorusInstanceTypeLabel = "torus.dev/instance-type";
inline constexpr const char* kDeviceCountLabel = "torus.dev/device-count";
inline constexpr const char* kHealthyDevicesLabel = "torus.dev/healthy-devices";
// Set by the operator (the chart's dra.nodeLabel default), never by the agent: `dra` puts the
// node's Neuron devices under the DRA driver instead of the device plugin.
inline constexpr const char* kNeuronModeLabel = "torus.dev/neuron-mode";
// Set by the operator, never by the agent: "true" or "false" overrides the DRA driver's
// core-partition setting (--dra-core-devices) on this node. Partitions cost every claim the
// scheduler filters there (a core claim rejects the chips first, a chip claim checks counters),
// so nodes that only run whole-chip jobs schedule faster without them (docs/benchmarks.md).
inline constexpr const char* kCoreDevicesLabel = "torus.dev/dra-core-devices";
// Set by the operator or a node group, never by the agent: "true" marks a Neuron node whatever
// its instance type, one of the ways the chart places the agent (neuronNodeLabels).
inline constexpr const char* kNeuronNodeLabel = "torus.dev/neuron";
// AWS's UltraServer labels: <prefix>mode, server-id-2, server-id-4, node-id-2, node-id-4.
inline constexpr const char* kUltraServerLabelPrefix = "neuron.amazonaws.com/ultraserver-";
// Kubernetes' well-known label, and its deprecated spelling older nodes still carry.
inline constexpr const char* kInstanceTypeLabel = "node.kubernetes.io/instance-type";
inline constexpr const char* kBetaInstanceTypeLabel = "beta.kubernetes.io/instance-type";

// ---- Gangs: pods users label so neuron-scheduler places them all or none ----
// A pod's gang (a label value, within its namespace) and how many pods the gang has.
inline constexpr const char* kGangLabel = "torus.dev/gang";
inline constexpr const char* kGangSizeLabel = "torus.dev/gang-size";
inline constexpr int kMaxGangSize = 256;
// EC2's network topology labels, farthest layer first (EKS sets them on nodes):
// topology.k8s.aws/network-node-layer-1, -2, -3; nodes sharing layer 3 are closest.
inline constexpr const char* kNetworkLayerLabelPrefix = "topology.k8s.aws/network-node-layer-";

// ---- Dynamic Resource Allocation (common/contracts/dra_names.h has the rest) ----
inline constexpr std::string_view kDraDriverName = "neuron.aws.com";

// ---- UltraServer workloads (neuron-ultraserver-operator <-> the DRA driver) ----
// The device attribute that tags every device of a node reserved for a NeuronUltraServerWorkload
// with its "namespace/name" (AWS's attribute name), and the annotation the operator's
// ResourceClaimTemplate gives each claim made from it, which the driver compares at prepare.
inline constexpr const char* kWorkloadIdAttribute = "workloadId";
inline constexpr const char* kWorkloadAnnotation = "neuron.aws.com/workload";
// A NoSchedule device taint on those devices, which only the workload's template tolerates, so
// that the scheduler gives them to nobody else (where the cluster keeps device taints).
inline constexpr const char* kReservedTaintKey = "neuron.aws.com/reserved";
// A DRA string attribute holds at most 64 characters, so "namespace/name" must fit in them.
inline constexpr std::size_t kMaxWorkloadIdLength = 64;
// The workloads and their allocations: neuron_ultraserver.h.

}  // namespace torus::contracts
