// How a device's health becomes the taints of its ResourceSlice entry (docs/dra.md, "Health
// taints"): the configurable scheme (HealthTaints, parsed from the agent's flag), the taints one
// device carries under it, and the order and cap the API imposes on a device's taints.
// Owns no slice layout and no attributes: slice_builder.h places these taints on chips, cores and
// the node device, and adds the UltraServer reservation's taint.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/topology/node.h"

namespace torus::dra {

// One key per health dimension (topology::dimensionName: hardware-error, ecc-uncorrected,
// device-lost, recovery, deep-check) with the fault's code as the value and `effect`, and one for
// a device whose health the agent cannot watch ("unmonitored", no value, `unmonitoredEffect`).
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

// The value of the legacy taint neuron.aws.com/unhealthy: a label-style word for the kind of the
// device's first fault ("UncorrectedECC", "KernelHardwareError", "ResetFailed",
// "DeviceNodeMissing", "DeepCheckFailed", "DiscoveryFailed"; while it waits for its reset and
// self-test "Recovering", then "SelfTestFailed" or "ResetFailed" after a failed attempt).
std::string legacyFaultKind(const topology::DeviceHealth& health);

// A device's health taints under `scheme`: one per dimension with a fault (the first fault's
// code), then the unmonitored one; the legacy scheme's single taint instead where chosen. Fault
// taints carry `since` (RFC 3339, when the device was first seen unhealthy) as timeAdded when it
// is not empty. `noneEffect` false: the API refuses the effect None, so an unmonitored taint of
// that effect is left out.
nlohmann::json deviceHealthTaints(const topology::DeviceHealth& health, const HealthTaints& scheme,
                                  const std::string& since, bool noneEffect);

// The API's limit on a device's taints before 1.35 (16 since).
inline constexpr std::size_t kMaxTaintsPerDevice = 4;

// Orders a device's taints (a JSON array) as they matter, faults first (they keep claims off),
// then the reservation (it keeps strangers off), the informational effect-None ones last, and
// drops what is past kMaxTaintsPerDevice.
void capTaints(nlohmann::json& taints);

}  // namespace torus::dra
