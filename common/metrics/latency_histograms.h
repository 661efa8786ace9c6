// LatencyHistograms: Prometheus histograms of how long calls take, by family and labels, with one
// set of buckets (0.5 ms .. 1 s, the range a kubelet or scheduler call lives in). Thread-safe; a
// process-wide registry like EventCounters, so the DRA service and the device plugin record
// where the call is answered and /metrics renders them.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/metrics/prometheus_text.h"

namespace torus::metrics {

class LatencyHistograms {
 public:
  static constexpr std::array<double, 10> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                      0.025,  0.05,  0.1,    0.5,   1.0};
  void observe(std::string_view family, const Labels& labels, std::chrono::nanoseconds elapsed);
  // The family's HELP and TYPE, then every series (none yet: the family alone).
  void render(PrometheusText& out, std::string_view family, std::string_view help) const;

 private:
  struct Series {
    std::array<std::uint64_t, kBuckets.size()> buckets{};
    double sumSeconds = 0;
    std::uint64_t count = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, std::map<Labels, Series>, std::less<>> families_;
};

LatencyHistograms& processHistograms();

// Times a scope into a family of the process-wide histograms.
class ScopedLatency {
 public:
  ScopedLatency(std::string_view family, Labels labels)
      : family_(family), labels_(std::move(labels)), started_(std::chrono::steady_clock::now()) {}
  ~ScopedLatency() {
    processHistograms().observe(family_, labels_, std::chrono::steady_clock::now() - started_);
  }
  ScopedLatency(const ScopedLatency&) = delete;
  ScopedLatency& operator=(const ScopedLatency&) = delete;

 private:
  std::string family_;
  Labels labels_;
  std::chrono::steady_clock::time_point started_;
};

namespace names {
inline constexpr const char* kDraRequestSeconds = "torus_dra_request_duration_seconds";
inline constexpr const char* kAllocateSeconds = "torus_plugin_allocate_duration_seconds";
}  // namespace names

}  // namespace torus::metrics
