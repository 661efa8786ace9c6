// The resources the plugin advertises, and how their ids map onto the node.
//
//   aws.amazon.com/neuroncore   one logical core; id = global logical core id ("0".."63")
//   aws.amazon.com/neuron       one whole device; id = device index ("0".."15")
//   aws.amazon.com/neurondevice legacy alias of neuron (AWS dropped it in Neuron 2.22); opt-in
// Same names and counts as AWS's plugin, so Karpenter's capacity predictions and existing pod
// specs keep working.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "common/topology/core_set.h"
#include "common/topology/node.h"
#include "common/topology/placement.h"

namespace torus::plugin {

enum class ResourceKind { kNeuronCore, kNeuron, kNeuronDevice };

std::string_view resourceName(ResourceKind kind);
// The socket file in the device-plugin directory, e.g. "torus-neuroncore.sock".
std::string socketName(ResourceKind kind);
topology::AllocationUnit unitOf(ResourceKind kind);
bool countsDevices(ResourceKind kind);
// "neuroncore,neuron" -> kinds; names may be short ("neuroncore") or full.
Result<std::vector<ResourceKind>> parseResourceList(std::string_view text);

// All ids of this kind on the node, as a set of numbers (core ids or device indices).
topology::CoreSet allIds(ResourceKind kind, const topology::Node& node);
// Ids whose device is healthy.
topology::CoreSet healthyIds(ResourceKind kind, const topology::Node& node);
// The global logical cores behind a set of ids of this kind.
topology::CoreSet coresOfIds(ResourceKind kind, const topology::Node& node,
                             const topology::CoreSet& ids);
// Parses kubelet's string ids ("0", "17"); errors name every unknown and duplicate id.
Result<topology::CoreSet> parseIds(ResourceKind kind, const topology::Node& node,
                                   const std::vector<std::string>& ids);
std::vector<std::string> formatIds(const topology::CoreSet& ids);

}  // namespace torus::plugin
