// `kubectl neuron claims`: the ResourceClaims the DRA driver neuron.aws.com holds devices for
// (which chips and cores on which node, for which pods) and the devices it has tainted, from the
// API's ResourceClaims and ResourceSlices. Pure: the caller lists the objects.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace torus::kubectl_neuron {

// `claims` and `slices` are the API's list objects (resource.k8s.io/v1). Only allocated devices
// of neuron.aws.com are shown; `namespace_` filters claims (empty: all).
std::string renderClaims(const nlohmann::json& claims, const nlohmann::json& slices,
                         const std::string& namespace_, bool json);

}  // namespace torus::kubectl_neuron
