#include "scheduler-extender/server/verb_metrics.h"

#include "common/metrics/prometheus_text.h"

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
  metrics::PrometheusText out;
  out.family("torus_extender_requests_total", "counter", "Extender requests by verb and result.");
  for (const auto& [verb, series] : series_) {
    out.sample("torus_extender_requests_total", {{"verb", verb}, {"result", "ok"}},
               static_cast<double>(series.ok));
    out.sample("torus_extender_requests_total", {{"verb", verb}, {"result", "error"}},
               static_cast<double>(series.error));
  }
  constexpr const char* kDuration = "torus_extender_request_duration_seconds";
  out.family(kDuration, "histogram", "Time to answer a verb.");
  for (const auto& [verb, series] : series_) {
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      out.sample(std::string(kDuration) + "_bucket",
                 {{"verb", verb}, {"le", metrics::formatValue(kBuckets[i])}},
                 static_cast<double>(series.buckets[i]));
    }
    out.sample(std::string(kDuration) + "_bucket", {{"verb", verb}, {"le", "+Inf"}},
               static_cast<double>(series.count));
    out.sample(std::string(kDuration) + "_sum", {{"verb", verb}}, series.sumSeconds);
    out.sample(std::string(kDuration) + "_count", {{"verb", verb}},
               static_cast<double>(series.count));
  }
  return out.text();
}

}  // namespace torus::extender
