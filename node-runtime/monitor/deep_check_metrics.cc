#include "node-runtime/monitor/deep_check_metrics.h"

#include "common/metrics/prometheus_text.h"

namespace torus::monitor {

std::string renderDeepCheckMetrics(const std::optional<DeepCheckSnapshot>& last) {
  metrics::PrometheusText out;
  out.family("torus_deep_check_last_run_timestamp_seconds", "gauge",
             "When the last deep health check finished (Unix time).");
  out.family("torus_deep_check_last_success_timestamp_seconds", "gauge",
             "When a deep health check last passed (Unix time).");
  out.family("torus_deep_check_duration_seconds", "gauge", "How long the last deep check took.");
  out.family("torus_deep_check_failures", "gauge",
             "Failed devices, links and AllReduce rings in the last deep check.");
  out.family("torus_deep_check_device_passed", "gauge",
             "1 when the device passed the last deep check's memory test, 0 when it failed; "
             "absent when it was in use and skipped.");
  out.family("torus_neuronlink_healthy", "gauge",
             "1 when the NeuronLink passed the last deep check (up, full speed, not slow), 0 "
             "when it failed.");
  out.family("torus_neuronlink_transfer_seconds", "gauge",
             "One deep-check transfer over the NeuronLink, fastest of the attempts.");
  out.family("torus_deep_check_allreduce_seconds", "gauge",
             "The last deep check's AllReduce ring over the idle devices.");
  if (!last) return out.text();

  const runtime::DeepCheckResult& result = last->result;
  out.sample("torus_deep_check_last_run_timestamp_seconds", {}, last->finishedAtSeconds);
  if (last->lastSuccessSeconds) {
    out.sample("torus_deep_check_last_success_timestamp_seconds", {}, *last->lastSuccessSeconds);
  }
  out.sample("torus_deep_check_duration_seconds", {}, result.seconds);
  out.sample("torus_deep_check_failures", {}, result.failures());
  for (const runtime::DeviceCheck& device : result.devices) {
    if (device.state == runtime::CheckState::kSkipped) continue;
    out.sample("torus_deep_check_device_passed",
               {{"neuron_device_index", std::to_string(device.device)}},
               device.state == runtime::CheckState::kPassed ? 1 : 0);
  }
  for (const runtime::LinkCheck& link : result.links) {
    if (link.state == runtime::CheckState::kSkipped) continue;
    const metrics::Labels labels = {{"neuron_device_index", std::to_string(link.a)},
                                    {"peer_device_index", std::to_string(link.b)}};
    out.sample("torus_neuronlink_healthy", labels,
               link.state == runtime::CheckState::kPassed ? 1 : 0);
    if (link.seconds) out.sample("torus_neuronlink_transfer_seconds", labels, *link.seconds);
  }
  if (result.allReduceSeconds) {
    out.sample("torus_deep_check_allreduce_seconds", {}, *result.allReduceSeconds);
  }
  return out.text();
}

}  // namespace torus::monitor
