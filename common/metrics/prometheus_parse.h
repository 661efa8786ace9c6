// Reads the Prometheus text exposition format (0.0.4) back into samples: what `kubectl neuron
// top` makes of the agents' /metrics. Comments and blank lines are skipped; a malformed line is
// an error naming its line number, so a truncated or foreign answer is never half-read.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace torus::metrics {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;

  // The label's value, or "" when absent.
  const std::string& label(const std::string& key) const;
};

Result<std::vector<Sample>> parsePrometheusText(std::string_view text);

}  // namespace torus::metrics
