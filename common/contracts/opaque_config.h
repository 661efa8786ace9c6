// The opaque configuration a ResourceClaim or DeviceClass hands the DRA driver
// (`opaque.driver: neuron.aws.com`, parameters of apiVersion neuron.aws.com/v1), the same kinds
// AWS's driver accepts. Written by the UltraServer operator into the ResourceClaimTemplates it
// makes (opaqueParameters) and by users into their claims; read by the driver at prepare
// (applyOpaqueParameters).
//   NeuronConfig        {logicalNeuronCore: 1|2}        logical NeuronCore size for the claim
//   UltraServerConfig   {ultraserverMode: 1|2|4}         how many UltraServer nodes work as one
// Parsing is strict: an unknown kind, an unknown field or a value out of range is an error that
// names the field, so a typo fails the pod's start instead of being silently ignored.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"

namespace torus::contracts {

inline constexpr std::string_view kOpaqueConfigApiVersion = "neuron.aws.com/v1";
inline constexpr std::string_view kNeuronConfigKind = "NeuronConfig";
inline constexpr std::string_view kUltraServerConfigKind = "UltraServerConfig";

struct NeuronSettings {
  std::optional<int> logicalNeuronCore;
  std::optional<int> ultraServerMode;

  bool operator==(const NeuronSettings&) const = default;
};

// Reads one `parameters` object into `settings` (later configs override earlier ones, as the
// DRA API orders class configs before claim configs).
Result<void> applyOpaqueParameters(const nlohmann::json& parameters, NeuronSettings& settings);

// The `parameters` objects that say `settings`: an UltraServerConfig when the mode is set, then a
// NeuronConfig when the LNC is; none when neither is.
std::vector<nlohmann::json> opaqueParameters(const NeuronSettings& settings);

}  // namespace torus::contracts
