#include "dra-driver/health_taints.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "common/base/strings.h"
#include "common/contracts/dra_names.h"

namespace torus::dra {

using nlohmann::json;

std::string HealthTaints::keyOf(std::string_view dimension) const {
  const auto configured = keys.find(std::string(dimension));
  if (configured != keys.end() && !configured->second.empty()) return configured->second;
  return std::string(kDriverName) + "/" + std::string(dimension);
}

bool isHealthTaintDimension(std::string_view name) {
  if (name == kUnmonitoredDimension) return true;
  for (const topology::HealthDimension dimension : topology::kHealthDimensions) {
    if (topology::dimensionName(dimension) == name) return true;
  }
  return false;
}

Result<std::map<std::string, std::string>> parseHealthTaintKeys(std::string_view text) {
  std::map<std::string, std::string> keys;
  for (const std::string_view item : splitAndTrim(text, ',')) {
    const std::string entry(item);
    if (entry.empty()) continue;
    const std::size_t equals = entry.find('=');
    const std::string dimension = entry.substr(0, equals);
    if (equals == std::string::npos || !isHealthTaintDimension(dimension)) {
      return makeError(ErrorCode::kInvalidArgument,
                       "health taint keys: " + quoteJsonString(entry) +
                           ": expected DIMENSION=KEY with DIMENSION one of hardware-error, "
                           "ecc-uncorrected, device-lost, recovery, deep-check, unmonitored");
    }
    const std::string key = entry.substr(equals + 1);
    const std::size_t slash = key.find('/');
    const auto nameOk = [](std::string_view name, std::size_t max, bool dots) {
      if (name.empty() || name.size() > max || !std::isalnum(static_cast<unsigned char>(name[0])) ||
          !std::isalnum(static_cast<unsigned char>(name.back()))) {
        return false;
      }
      return std::all_of(name.begin(), name.end(), [&](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
               (!dots && c == '_');
      });
    };
    if (slash == std::string::npos || !nameOk(std::string_view(key).substr(0, slash), 253, true) ||
        !nameOk(std::string_view(key).substr(slash + 1), 63, false)) {
      return makeError(ErrorCode::kInvalidArgument,
                       "health taint keys: " + quoteJsonString(key) + " for " + dimension +
                           ": expected a qualified name with a domain (example.com/name)");
    }
    keys[dimension] = key;
  }
  return keys;
}

std::string legacyFaultKind(const topology::DeviceHealth& health) {
  using topology::HealthDimension;
  if (health.healthy || health.problems.empty()) return health.healthy ? "" : "Unhealthy";
  const topology::HealthProblem& first = health.problems.front();
  switch (first.dimension) {
    case HealthDimension::kHardwareError:
      return "KernelHardwareError";
    case HealthDimension::kEccUncorrected:
      return "UncorrectedECC";
    case HealthDimension::kRecovery:
      return first.code;  // Recovering, ResetFailed, SelfTestFailed
    case HealthDimension::kDeepCheck:
      return "DeepCheckFailed";
    case HealthDimension::kDeviceLost:
      if (first.code == "DeviceNodeMissing" || first.code == "DiscoveryFailed") return first.code;
      if (first.code == "ResetStateInvalid") return "ResetFailed";
      return "Unhealthy";
  }
  return "Unhealthy";
}

json deviceHealthTaints(const topology::DeviceHealth& health, const HealthTaints& scheme,
                        const std::string& since, bool noneEffect) {
  const auto stamped = [&](json taint) {
    if (!since.empty()) taint["timeAdded"] = since;
    return taint;
  };
  json taints = json::array();
  if (!health.healthy && scheme.legacy) {
    taints.push_back(stamped({{"key", std::string(kHealthTaintKey)},
                              {"value", legacyFaultKind(health)},
                              {"effect", scheme.effect}}));
  } else if (!health.healthy) {
    std::vector<std::string> keys;
    for (const topology::HealthProblem& problem : health.problems) {
      const std::string key = scheme.keyOf(topology::dimensionName(problem.dimension));
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      keys.push_back(key);
      // A chip waiting for its reset has no live fault: it is kept from new claims, but the
      // pods that tolerated its fault are not evicted now that the fault has gone.
      const bool recovering = problem.dimension == topology::HealthDimension::kRecovery;
      const std::string effect =
          recovering && scheme.effect == "NoExecute" ? "NoSchedule" : scheme.effect;
      taints.push_back(stamped(
          {{"key", key}, {"value", topology::healthCode(problem.code)}, {"effect", effect}}));
    }
  }
  const bool informational = scheme.unmonitoredEffect != "None" || noneEffect;
  if (!health.unmonitored.empty() && !scheme.unmonitoredEffect.empty() && informational) {
    taints.push_back(
        {{"key", scheme.keyOf(kUnmonitoredDimension)}, {"effect", scheme.unmonitoredEffect}});
  }
  return taints;
}

void capTaints(json& taints) {
  std::stable_sort(taints.begin(), taints.end(), [](const json& a, const json& b) {
    return (a["effect"] == "None") < (b["effect"] == "None");
  });
  while (taints.size() > kMaxTaintsPerDevice)
    taints.erase(taints.size() - 1);
}

}  // namespace torus::dra
