// The opaque configuration a ResourceClaim or DeviceClass hands this driver
// (`opaque.driver: neuron.aws.com`, parameters of apiVersion neuron.aws.com/v1), the same kinds
// AWS's driver accepts:
//   NeuronConfig        {logicalNeuronCore: 1|2}        logical NeuronCore size for the claim
//   UltraServerConfig   {ultraserverMode: 1|2|4}         how many UltraServer nodes work as one
// Parsing is strict: an unknown kind, an unknown field or a value out of range is an error that
// names the field, so a typo fails the pod's start instead of being silently ignored.
#pragma once

#include <optional>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"

namespace torus::dra {

struct NeuronSettings {
  std::optional<int> logicalNeuronCore;
  std::optional<int> ultraServerMode;
};

// Reads one `parameters` object into `settings` (later configs override earlier ones, as the
// DRA API orders class configs before claim configs).
Result<void> applyOpaqueParameters(const nlohmann::json& parameters, NeuronSettings& settings);

}  // namespace torus::dra
