// The Kubernetes objects kubectl neuron debug puts in its archive, reduced to the fields that
// describe Neuron use: a Node's conditions, capacity and taints; a pod's placement, resources and
// status; a ResourceClaim's requests and allocation; an Event. Everything else is left out on
// purpose (pod env and volumes, annotations but Torus's and Neuron's, a claim's opaque driver
// configuration), since any of it may hold a credential the text scrubber cannot recognize.
// Owns no archive layout (debug_bundle.h) and no collection (debug_collect.h).
#pragma once

#include <nlohmann/json.hpp>

namespace torus::kubectl_neuron {

nlohmann::json nodeSummary(const nlohmann::json& node);
nlohmann::json podSummary(const nlohmann::json& pod);
// A claim without its opaque configuration (parameters for drivers: anything may be in there).
nlohmann::json claimSummary(const nlohmann::json& claim);
nlohmann::json eventSummary(const nlohmann::json& event);
// Only the named members of `object` that it has (an empty object for a non-object).
nlohmann::json pick(const nlohmann::json& object, std::initializer_list<const char*> names);

}  // namespace torus::kubectl_neuron
