// What the node agent's device plugin has told kubelet, published on its Node so the scheduler
// extender never offers an id kubelet would refuse at admission (UnexpectedAdmissionError is
// final: the pod never runs). Written by the agent, read by the extender; a round-trip test holds
// the two together.
//
//   annotation torus.dev/kubelet-unavailable
//     {"aws.amazon.com/neuron":"0-1","aws.amazon.com/neuroncore":"40-43"}
//     per resource, the ids kubelet would not give a new pod now: those the plugin last sent as
//     Unhealthy (a fault, or held through the other resource: a device with a core in use, the
//     cores of a device in use whole), and those kubelet still counts in use (a finished pod's
//     until kubelet has torn it down, as its pod-resources lists them). The agent writes it only
//     after kubelet has the list it describes, so the extender's view is never ahead of kubelet's.
//     Absent: the agent has not served kubelet yet (or is older).
//   taint torus.dev/device-plugin-restarting:NoSchedule
//     set by an agent that is stopping, before it closes its plugin sockets (kubelet then counts
//     no device of ours until the next agent has registered), removed by the agent that serves
//     kubelet again. Every scheduler honours it, so no pod is bound while kubelet has nothing.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "common/topology/core_set.h"

namespace torus::contracts {

inline constexpr const char* kKubeletUnavailableAnnotation = "torus.dev/kubelet-unavailable";
inline constexpr const char* kRestartingTaintKey = "torus.dev/device-plugin-restarting";
inline constexpr const char* kRestartingTaintEffect = "NoSchedule";

// Resource name -> ids kubelet would not give a new pod (only resources the plugin serves).
using KubeletUnavailable = std::map<std::string, topology::CoreSet>;

// Whether a Node object (as the API returns it) carries the restarting taint.
bool hasRestartingTaint(const nlohmann::json& node);

std::string renderKubeletUnavailable(const KubeletUnavailable& unhealthy);
// Refuses anything but an object of our resource names to id ranges, naming what is wrong.
Result<KubeletUnavailable> parseKubeletUnavailable(std::string_view text);

}  // namespace torus::contracts
