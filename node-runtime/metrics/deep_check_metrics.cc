#include "node-runtime/metrics/deep_check_metrics.h"

#include <algorithm>

#include "common/contracts/agent_metrics.h"
#include "common/metrics/prometheus_text.h"

namespace torus::metrics {

namespace wire = contracts::agent_metrics;

std::string renderDeepCheckMetrics(const std::optional<DeepCheckSnapshot>& last) {
  metrics::PrometheusText out;
  out.family(wire::kDeepCheckLastRun, "gauge",
             "When the last deep health check finished (Unix time).");
  out.family("torus_deep_check_last_success_timestamp_seconds", "gauge",
             "When a deep health check last passed (Unix time).");
  out.family("torus_deep_check_duration_seconds", "gauge", "How long the last deep check took.");
  out.family(wire::kDeepCheckFailures, "gauge",
             "Failed devices, links, check commands and host AllReduce rings in the last deep "
             "check.");
  out.family("torus_deep_check_device_passed", "gauge",
             "1 when the device passed the last deep check's memory test (a pattern written and "
             "read back through its PCI BAR), 0 when it failed; absent when it was in use or "
             "the test could not run (torus_deep_check_checked{part=\"device_memory\"} 0).");
  out.family("torus_neuronlink_up", "gauge",
             "1 when both ends of the NeuronLink list each other in the driver's "
             "connected_devices at the last deep check, 0 when not; absent when an end was in "
             "use.");
  out.family("torus_neuronlink_trained_at_max_speed", "gauge",
             "1 when the driver reports the NeuronLink trained at its maximum speed at the last "
             "deep check, 0 when below; absent when the driver reports no link speed.");
  out.family("torus_deep_check_command_passed", "gauge",
             "1 when the external check command (--deep-check-command, which drives the "
             "NeuronLinks) exited 0 at the last deep check, 0 when not; absent when it did not "
             "run.");
  out.family("torus_deep_check_command_seconds", "gauge",
             "How long the external check command ran at the last deep check.");
  out.family("torus_deep_check_host_allreduce_seconds", "gauge",
             "The last deep check's AllReduce ring on this host's CPU, one rank per idle device "
             "(the collectives path; its traffic does not cross NeuronLinks).");
  out.family("torus_deep_check_checked", "gauge",
             "1 when the last deep check measured this part, 0 when nothing on this node could "
             "(the log and GET /deep-check say why).");
  if (!last) return out.text();

  const health::DeepCheckResult& result = last->result;
  out.sample(wire::kDeepCheckLastRun, {}, last->finishedAtSeconds);
  if (last->lastSuccessSeconds) {
    out.sample("torus_deep_check_last_success_timestamp_seconds", {}, *last->lastSuccessSeconds);
  }
  out.sample("torus_deep_check_duration_seconds", {}, result.seconds);
  out.sample(wire::kDeepCheckFailures, {}, result.failures());
  for (const health::DeviceCheck& device : result.devices) {
    // Only a test that ran passes or fails: a device it could not test is not "passed".
    if (device.state != health::CheckState::kPassed &&
        device.state != health::CheckState::kFailed) {
      continue;
    }
    out.sample("torus_deep_check_device_passed",
               {{wire::kDeviceIndexLabel, std::to_string(device.device)}},
               device.state == health::CheckState::kPassed ? 1 : 0);
  }
  for (const health::LinkCheck& link : result.links) {
    if (link.state == health::CheckState::kSkipped) continue;
    const metrics::Labels labels = {{wire::kDeviceIndexLabel, std::to_string(link.a)},
                                    {"peer_device_index", std::to_string(link.b)}};
    out.sample("torus_neuronlink_up", labels, link.listed ? 1 : 0);
    if (link.speed) {
      out.sample("torus_neuronlink_trained_at_max_speed", labels,
                 link.speed->current < link.speed->max ? 0 : 1);
    }
  }
  if (result.command) {
    out.sample("torus_deep_check_command_passed", {},
               result.command->state == health::CheckState::kPassed ? 1 : 0);
    out.sample("torus_deep_check_command_seconds", {}, result.command->seconds);
  }
  if (result.hostAllReduceSeconds) {
    out.sample("torus_deep_check_host_allreduce_seconds", {}, *result.hostAllReduceSeconds);
  }
  for (const char* part : {"device_memory", "link_speed", "neuronlink_traffic", "host_allreduce"}) {
    const bool skipped =
        std::any_of(result.notChecked.begin(), result.notChecked.end(),
                    [&](const health::NotChecked& item) { return item.part == part; });
    out.sample("torus_deep_check_checked", {{"part", part}}, skipped ? 0 : 1);
  }
  return out.text();
}

}  // namespace torus::metrics
