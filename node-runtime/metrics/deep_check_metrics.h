// The deep health check's gauges on the agent's /metrics: when it last ran and last passed, how
// long it took, and per device and per NeuronLink what the last run found. The run counter
// (torus_deep_check_runs_total) is an event counter rendered with the others (agent_metrics.h).
#pragma once

#include <optional>
#include <string>

#include "node-runtime/health/deep_check/deep_check.h"

namespace torus::metrics {

struct DeepCheckSnapshot {
  health::DeepCheckResult result;
  double finishedAtSeconds = 0;
  std::optional<double> lastSuccessSeconds;
};

// Families are always declared; samples appear once a check has run.
std::string renderDeepCheckMetrics(const std::optional<DeepCheckSnapshot>& last);

}  // namespace torus::metrics
