#include "common/metrics/latency_histograms.h"

namespace torus::metrics {

void LatencyHistograms::observe(std::string_view family, const Labels& labels,
                                std::chrono::nanoseconds elapsed) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  std::lock_guard lock(mutex_);
  auto it = families_.find(family);
  if (it == families_.end())
    it = families_.emplace(std::string(family), std::map<Labels, Series>()).first;
  Series& series = it->second[labels];
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++series.buckets[i];
  }
  series.sumSeconds += seconds;
  ++series.count;
}

void LatencyHistograms::render(PrometheusText& out, std::string_view family,
                               std::string_view help) const {
  out.family(family, "histogram", help);
  std::lock_guard lock(mutex_);
  const auto it = families_.find(family);
  if (it == families_.end()) return;
  const std::string bucket = std::string(family) + "_bucket";
  for (const auto& [labels, series] : it->second) {
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      Labels withLe = labels;
      withLe.emplace_back("le", formatValue(kBuckets[i]));
      out.sample(bucket, withLe, static_cast<double>(series.buckets[i]));
    }
    Labels infinite = labels;
    infinite.emplace_back("le", "+Inf");
    out.sample(bucket, infinite, static_cast<double>(series.count));
    out.sample(std::string(family) + "_sum", labels, series.sumSeconds);
    out.sample(std::string(family) + "_count", labels, static_cast<double>(series.count));
  }
}

LatencyHistograms& processHistograms() {
  static LatencyHistograms histograms;
  return histograms;
}

}  // namespace torus::metrics
