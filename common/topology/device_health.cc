#include "common/topology/device_health.h"

#include <cctype>

namespace torus::topology {

std::string_view dimensionName(HealthDimension dimension) {
  switch (dimension) {
    case HealthDimension::kHardwareError:
      return "hardware-error";
    case HealthDimension::kEccUncorrected:
      return "ecc-uncorrected";
    case HealthDimension::kDeviceLost:
      return "device-lost";
    case HealthDimension::kRecovery:
      return "recovery";
    case HealthDimension::kDeepCheck:
      return "deep-check";
  }
  return "device-lost";
}

std::string_view stateName(HealthState state) {
  switch (state) {
    case HealthState::kHealthy:
      return "healthy";
    case HealthState::kUnhealthy:
      return "unhealthy";
    case HealthState::kUnknown:
      return "unknown";
  }
  return "unknown";
}

DeviceHealth DeviceHealth::unhealthy(std::vector<HealthProblem> problems) {
  DeviceHealth health;
  for (HealthProblem& problem : problems)
    health.add(std::move(problem));
  return health;
}

DeviceHealth DeviceHealth::unhealthy(HealthDimension dimension, std::string code,
                                     std::string text) {
  return unhealthy({HealthProblem{dimension, std::move(code), std::move(text)}});
}

void DeviceHealth::add(HealthProblem problem) {
  healthy = false;
  if (!reason.empty()) reason += "; ";
  reason += problem.text;
  problems.push_back(std::move(problem));
}

HealthState DeviceHealth::state() const {
  if (!healthy) return HealthState::kUnhealthy;
  return unmonitored.empty() ? HealthState::kHealthy : HealthState::kUnknown;
}

DeviceHealth reportedUnhealthy() {
  return DeviceHealth::unhealthy(HealthDimension::kDeviceLost, "ReportedUnhealthy",
                                 "reported unhealthy by the node agent");
}

std::string healthCode(std::string_view text) {
  std::string code;
  for (const char c : text) {
    if (code.size() == 63) break;
    const bool plain =
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    code += plain ? c : '_';
  }
  while (!code.empty() && !std::isalnum(static_cast<unsigned char>(code.back())))
    code.pop_back();
  std::size_t start = 0;
  while (start < code.size() && !std::isalnum(static_cast<unsigned char>(code[start])))
    ++start;
  code.erase(0, start);
  return code.empty() ? "Unknown" : code;
}

}  // namespace torus::topology
