// Request counts and latency histograms per verb, and the connections the HTTP server cut, in
// Prometheus text format for /metrics.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "common/metrics/latency_histograms.h"

namespace torus::extender {

class VerbMetrics {
 public:
  void record(const std::string& verb, bool ok, std::chrono::nanoseconds elapsed);
  std::string prometheusText() const;

 private:
  struct Counts {
    std::uint64_t ok = 0;
    std::uint64_t error = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Counts> counts_;
  metrics::LatencyHistograms durations_;
};

}  // namespace torus::extender
