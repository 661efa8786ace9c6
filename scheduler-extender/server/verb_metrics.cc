#include "scheduler-extender/server/verb_metrics.h"

#include "common/metrics/event_counters.h"
#include "common/metrics/prometheus_text.h"

namespace torus::extender {

namespace {
constexpr const char* kDuration = "torus_extender_request_duration_seconds";
}  // namespace

void VerbMetrics::record(const std::string& verb, bool ok, std::chrono::nanoseconds elapsed) {
  durations_.observe(kDuration, {{"verb", verb}}, elapsed);
  std::lock_guard lock(mutex_);
  Counts& counts = counts_[verb];
  (ok ? counts.ok : counts.error)++;
}

std::string VerbMetrics::prometheusText() const {
  metrics::PrometheusText out;
  out.family("torus_extender_requests_total", "counter", "Extender requests by verb and result.");
  {
    std::lock_guard lock(mutex_);
    for (const auto& [verb, counts] : counts_) {
      out.sample("torus_extender_requests_total", {{"verb", verb}, {"result", "ok"}},
                 static_cast<double>(counts.ok));
      out.sample("torus_extender_requests_total", {{"verb", verb}, {"result", "error"}},
                 static_cast<double>(counts.error));
    }
  }
  durations_.render(out, kDuration, "Time to answer a verb.");
  // Counted where gang members are filtered (verbs/gang_verbs).
  metrics::processCounters().render(out, metrics::names::kGangFiltersTotal,
                                    metrics::names::kGangFiltersHelp);
  // Kept process-wide by the HTTP server's connection reaper.
  metrics::processCounters().render(out, metrics::names::kHttpConnectionsCutTotal,
                                    metrics::names::kHttpConnectionsCutHelp);
  return out.text();
}

}  // namespace torus::extender
