// The small text formats every component reads: core-id sets ("0-3,8"), Kubernetes quantities,
// durations, sysfs attributes, the logical_nc_config file and an agent's /metrics as `kubectl
// neuron top` reads it. Parsing never crashes, and what parses round-trips or stays in its
// documented range; top renders whatever parses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/base/parse.h"
#include "common/kube/quantity.h"
#include "common/metrics/prometheus_parse.h"
#include "common/metrics/prometheus_text.h"
#include "common/topology/core_set.h"
#include "kubectl-neuron/neuron_top.h"
#include "node-runtime/discovery/lnc_config.h"
#include "node-runtime/discovery/sysfs_attribute.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torus;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto ids = topology::CoreSet::parse(text)) {
    auto ranges = topology::CoreSet::parse(ids->toRangeString());
    auto list = topology::CoreSet::parse(ids->toListString());
    if (!ranges || !list || *ranges != *ids || *list != *ids) std::abort();
  }
  if (auto count = kube::wholeQuantity(text, 0, 4096); count && (*count < 0 || *count > 4096)) {
    std::abort();
  }
  if (auto millis = parseDurationMillis(text);
      millis && (*millis < 0 || *millis > kMaxDurationMillis)) {
    std::abort();
  }
  if (auto lnc = discovery::parseLncConfigFile(text); lnc && *lnc != 1 && *lnc != 2) std::abort();
  (void)discovery::parseCoreCount(text);
  (void)discovery::parseConnectedDevices(text);
  (void)discovery::parseCounter(text);
  (void)discovery::parseSerialNumber(text);
  (void)discovery::parseResetState(text);
  (void)discovery::parseUltraServerNodeId(text);
  (void)discovery::parseUltraServerId(text);
  (void)discovery::parseUltraServerModes(text);
  (void)discovery::parseName(text);

  if (auto samples = metrics::parsePrometheusText(text)) {
    metrics::PrometheusText written;
    for (const metrics::Sample& sample : *samples) {
      written.sample(sample.name, metrics::Labels(sample.labels.begin(), sample.labels.end()),
                     sample.value);
    }
    auto again = metrics::parsePrometheusText(written.text());
    if (!again || again->size() != samples->size()) std::abort();
    for (std::size_t i = 0; i < samples->size(); ++i) {
      const metrics::Sample& a = (*samples)[i];
      const metrics::Sample& b = (*again)[i];
      // Written exactly: the same double back (or NaN again).
      const bool sameValue = a.value == b.value || (a.value != a.value && b.value != b.value);
      if (a.name != b.name || a.labels != b.labels || !sameValue) std::abort();
    }
    kubectl_neuron::AgentScrape scrape;
    scrape.node = "n";
    scrape.samples = std::move(*samples);
    kubectl_neuron::TopOptions options;
    options.node = "n";
    (void)kubectl_neuron::renderTop({scrape}, nlohmann::json::object(), options);
  }
  return 0;
}
