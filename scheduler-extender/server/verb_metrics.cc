#include "scheduler-extender/server/verb_metrics.h"

#include <cstdio>

namespace torus::extender {

void VerbMetrics::record(const std::string& verb, bool ok, std::chrono::nanoseconds elapsed) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  std::lock_guard lock(mutex_);
  Series& series = series_[verb];
  (ok ? series.ok : series.error)++;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++series.buckets[i];
  }
  series.sumSeconds += seconds;
  ++series.count;
}

std::string VerbMetrics::prometheusText() const {
  std::lock_guard lock(mutex_);
  std::string out =
      "# HELP torus_extender_requests_total Extender requests by verb and result.\n"
      "# TYPE torus_extender_requests_total counter\n";
  for (const auto& [verb, series] : series_) {
    out += "torus_extender_requests_total{verb=\"" + verb + "\",result=\"ok\"} " +
           std::to_string(series.ok) + "\n";
    out += "torus_extender_requests_total{verb=\"" + verb + "\",result=\"error\"} " +
           std::to_string(series.error) + "\n";
  }
  out +=
      "# HELP torus_extender_request_duration_seconds Time to answer a verb.\n"
      "# TYPE torus_extender_request_duration_seconds histogram\n";
  for (const auto& [verb, series] : series_) {
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      char le[32];
      std::snprintf(le, sizeof(le), "%g", kBuckets[i]);
      out += "torus_extender_request_duration_seconds_bucket{verb=\"" + verb + "\",le=\"" + le +
             "\"} " + std::to_string(series.buckets[i]) + "\n";
    }
    out += "torus_extender_request_duration_seconds_bucket{verb=\"" + verb + "\",le=\"+Inf\"} " +
           std::to_string(series.count) + "\n";
    char sum[48];
    std::snprintf(sum, sizeof(sum), "%.9f", series.sumSeconds);
    out += "torus_extender_request_duration_seconds_sum{verb=\"" + verb + "\"} " + sum + "\n";
    out += "torus_extender_request_duration_seconds_count{verb=\"" + verb + "\"} " +
           std::to_string(series.count) + "\n";
  }
  return out;
}

}  // namespace torus::extender
