// A device's health as the node agent knows it: in service or not, why (for people), each cause
// as a health dimension with a label-style code (for taints and metrics, no parsing needed), and
// which of the agent's sources of health it cannot watch the device through right now.
//
// The three states follow Neuron Observer's: healthy, unhealthy (a fault takes it out of
// service), unknown (no fault seen, but a source the agent depends on is lost: the kernel log
// is not followed, a counter cannot be read). An unknown device stays in service: nothing says
// it is faulty, and taking every chip off a node whose log reader failed would be an outage made
// by the monitor itself. Taints and metrics say it is unmonitored instead.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace torus::topology {

// One key per dimension in the DRA taint scheme (docs/dra.md).
enum class HealthDimension {
  kHardwareError,   // the driver's NEURON_HW_ERR in the kernel log; code: its type
  kEccUncorrected,  // a non-zero uncorrected ECC counter; code: the counter's memory ("mem")
  kDeviceLost,      // device node, driver attributes or the driver itself gone or unreadable
  kRecovery,        // cause cleared, waiting for (or failed) its reset and self-test
  kDeepCheck,       // an active check (collectives, memory) failed on it
};

inline constexpr HealthDimension kHealthDimensions[] = {
    HealthDimension::kHardwareError, HealthDimension::kEccUncorrected, HealthDimension::kDeviceLost,
    HealthDimension::kRecovery, HealthDimension::kDeepCheck};

// "hardware-error", "ecc-uncorrected", "device-lost", "recovery", "deep-check".
std::string_view dimensionName(HealthDimension dimension);

struct HealthProblem {
  HealthDimension dimension = HealthDimension::kDeviceLost;
  std::string code;  // label-style value: [A-Za-z0-9_.-], at most 63 characters
  std::string text;  // for people: names the file or source and the value that showed it

  bool operator==(const HealthProblem&) const = default;
};

enum class HealthState { kHealthy, kUnhealthy, kUnknown };
std::string_view stateName(HealthState state);  // "healthy", "unhealthy", "unknown"

struct DeviceHealth {
  bool healthy = true;  // in service
  std::string reason;   // why it is unhealthy: the problems' texts, "; "-joined
  std::vector<HealthProblem> problems;
  // The sources of health the agent cannot watch this device through now, each named with why
  // ("kernel log: syslog(2) refused: ..."); empty when every source works.
  std::vector<std::string> unmonitored;
  // The checks the device passed when it last came back into service after a fault: "reset" or
  // "reset,self-test"; empty when it has not left service since the agent started.
  std::string recoveredWith;

  static DeviceHealth unhealthy(std::vector<HealthProblem> problems);
  static DeviceHealth unhealthy(HealthDimension dimension, std::string code, std::string text);
  // Adds a problem (the device leaves service; the reason grows by its text).
  void add(HealthProblem problem);
  HealthState state() const;

  bool operator==(const DeviceHealth&) const = default;
};

// A device another process (the node agent) reported out of service, without its causes.
DeviceHealth reportedUnhealthy();

// `text` made a label-style code: characters outside [A-Za-z0-9_.-] become '_', at most 63,
// starting and ending alphanumeric ("" stays "Unknown").
std::string healthCode(std::string_view text);

}  // namespace torus::topology
