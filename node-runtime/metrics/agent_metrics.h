// The agent's /metrics: the driver's counters under neuron-monitor's exporter names (so existing
// Grafana dashboards work: hardware_ecc_events_total, neuroncore_memory_usage_*,
// neuron_runtime_memory_used_bytes, execution_status_total, execution_errors_total,
// neuron_hardware_info, instance_info), plus the agent's own torus_* series (device health,
// allocations, resets, registrations, health transitions, build info). Labels include
// instance_type, neuron_device_index and neuroncore (global logical core id, as in
// NEURON_RT_VISIBLE_CORES); per-core and per-device series also carry the holder's pod,
// namespace and container (CoreTenants).
#pragma once

#include <string>

#include "common/metrics/event_counters.h"
#include "common/metrics/latency_histograms.h"
#include "common/topology/node.h"
#include "node-runtime/metrics/core_tenants.h"
#include "node-runtime/metrics/device_stats.h"

namespace torus::metrics {

std::string renderAgentMetrics(const topology::Node& node, const NodeStats& stats,
                               const CoreTenants& tenants, const metrics::EventCounters& counters,
                               const metrics::LatencyHistograms& histograms);

}  // namespace torus::metrics
