// The names other software sees on pods and nodes: the extender -> device plugin hand-off (AWS's
// keys, so AWS's plugin and HAMi read ours and we read theirs) and Torus's own node metadata.
#pragma once

namespace torus::kube {

// Pod annotations written at bind, read by the device plugin.
inline constexpr const char* kNeuronIdsAnnotation = "AWS_NEURON_IDS";     // "0,1,2,3"
inline constexpr const char* kAllocTimeAnnotation = "NEURON_ALLOC_TIME";  // ns since the epoch
inline constexpr const char* kAllocatedAnnotation = "NEURON_ALLOCATED";   // "false", then "true"
inline constexpr const char* kResourceTypeAnnotation = "NEURON_RESOURCE_TYPE";

// Node metadata the agent publishes and the extender reads.
inline constexpr const char* kTopologyAnnotation = "torus.dev/topology";
inline constexpr const char* kLncLabel = "torus.dev/lnc";
inline constexpr const char* kInstanceTypeLabel = "node.kubernetes.io/instance-type";
inline constexpr const char* kBetaInstanceTypeLabel = "beta.kubernetes.io/instance-type";

}  // namespace torus::kube
