// Request counts and latency histograms per verb, in Prometheus text format for /metrics.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace torus::extender {

class VerbMetrics {
 public:
  void record(const std::string& verb, bool ok, std::chrono::nanoseconds elapsed);
  std::string prometheusText() const;

 private:
  static constexpr std::array<double, 10> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                      0.025,  0.05,  0.1,    0.5,   1.0};
  struct Series {
    std::uint64_t ok = 0;
    std::uint64_t error = 0;
    std::array<std::uint64_t, kBuckets.size()> buckets{};
    double sumSeconds = 0;
    std::uint64_t count = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Series> series_;
};

}  // namespace torus::extender
