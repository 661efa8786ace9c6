// Prometheus text exposition format (version 0.0.4): families with HELP and TYPE, samples with
// escaped label values. One writer for every /metrics we serve, so escaping and number
// formatting are right in one place.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace torus::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  // type: "counter", "gauge" or "histogram".
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, double value);
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// "1", "0.25", "1e+21", "+Inf": integers without a fraction, others in the shortest form that
// reads back as the same double.
std::string formatValue(double value);

}  // namespace torus::metrics
