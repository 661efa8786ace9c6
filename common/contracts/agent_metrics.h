// The names of the node agent's /metrics that `kubectl neuron top` reads back: the families and
// labels written by node-runtime/metrics (agent_metrics.cc, core_tenants.cc,
// deep_check_metrics.cc) and summed by kubectl-neuron/neuron_top.cc. Most are
// neuron-monitor's exporter names, which Grafana dashboards and CloudWatch also read, so a rename
// breaks more than the CLI; tests/unit/contracts/agent_metrics_test.cc renders one node's metrics
// and reads them back.
//
// Not here: the families no reader in this repository parses (torus_*_total event counters,
// histograms, health states), whose names live with their writers.
#pragma once

namespace torus::contracts::agent_metrics {

// ---- families ----
// 1, labelled with the node's hardware: instance_type, neuron_device_count,
// neuroncore_per_device_count, logical_neuroncore_config.
inline constexpr const char* kHardwareInfo = "neuron_hardware_info";
// 1 per held core and holder: pod, namespace, container, resource, neuroncore, neuron_device_index.
inline constexpr const char* kAllocationInfo = "torus_allocation_info";
// neuroncore_memory_usage_<category>: device memory per logical core, in bytes.
inline constexpr const char* kCoreMemoryUsagePrefix = "neuroncore_memory_usage_";
// Executions per logical core, by status_type.
inline constexpr const char* kExecutionStatus = "execution_status_total";
// Execution errors per logical core, by error_type.
inline constexpr const char* kExecutionErrors = "execution_errors_total";
// 1 when the device is in service.
inline constexpr const char* kDeviceHealthy = "torus_device_healthy";
// ECC events per device since the driver loaded, by event_type.
inline constexpr const char* kEccEvents = "hardware_ecc_events_total";
// When the last deep check finished (Unix time), and how much of it failed.
inline constexpr const char* kDeepCheckLastRun = "torus_deep_check_last_run_timestamp_seconds";
inline constexpr const char* kDeepCheckFailures = "torus_deep_check_failures";

// ---- labels ----
inline constexpr const char* kInstanceTypeLabel = "instance_type";
inline constexpr const char* kDeviceIndexLabel = "neuron_device_index";
inline constexpr const char* kCoreLabel = "neuroncore";  // global logical core id
inline constexpr const char* kLncLabel = "logical_neuroncore_config";
inline constexpr const char* kDeviceCountLabel = "neuron_device_count";
inline constexpr const char* kCoresPerDeviceLabel = "neuroncore_per_device_count";
inline constexpr const char* kStatusTypeLabel = "status_type";
inline constexpr const char* kEventTypeLabel = "event_type";
// The holder of a core or device (CoreTenants); several holders are comma-separated.
inline constexpr const char* kPodLabel = "pod";
inline constexpr const char* kNamespaceLabel = "namespace";
inline constexpr const char* kContainerLabel = "container";
inline constexpr const char* kResourceLabel = "resource";

// ---- label values ----
// status_type of a successful execution.
inline constexpr const char* kStatusCompleted = "completed";
// An event_type that holds this word counts an uncorrected ECC error (mem_ecc_uncorrected,
// sram_ecc_uncorrected: the driver's counter names).
inline constexpr const char* kUncorrectedEventWord = "uncorrected";

}  // namespace torus::contracts::agent_metrics
