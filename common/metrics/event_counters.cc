#include "common/metrics/event_counters.h"

namespace torus::metrics {

void EventCounters::add(std::string_view family, const Labels& labels, double amount) {
  std::lock_guard lock(mutex_);
  auto it = values_.find(family);
  if (it == values_.end())
    it = values_.emplace(std::string(family), std::map<Labels, double>{}).first;
  it->second[labels] += amount;
}

double EventCounters::value(std::string_view family, const Labels& labels) const {
  std::lock_guard lock(mutex_);
  const auto it = values_.find(family);
  if (it == values_.end()) return 0;
  const auto found = it->second.find(labels);
  return found == it->second.end() ? 0 : found->second;
}

void EventCounters::render(PrometheusText& out, std::string_view family,
                           std::string_view help) const {
  out.family(family, "counter", help);
  std::lock_guard lock(mutex_);
  const auto it = values_.find(family);
  if (it == values_.end()) return;
  for (const auto& [labels, value] : it->second)
    out.sample(family, labels, value);
}

EventCounters& processCounters() {
  static EventCounters counters;
  return counters;
}

}  // namespace torus::metrics
