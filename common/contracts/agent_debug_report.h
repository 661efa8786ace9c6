// The keys of the node agent's debug report (GET /debug on its admin address, printed by
// `neuron-node-agent debug`; node-runtime/agent/debug_report.cc) and of its allocations
// (/allocations; node_agent_http.cc) that `kubectl neuron debug` reads to lay out its archive
// and pick the pods and claims on a device (kubectl-neuron/debug_bundle.cc).
// tests/unit/contracts/agent_debug_report_test.cc builds a report and archives it.
//
// Not here: the report's other keys (health, serialNumber, pciAttributes, ...), which the CLI
// copies whole without reading them.
#pragma once

namespace torus::contracts::debug_report {

// ---- the report ----
inline constexpr const char* kKind = "NeuronAgentDebugReport";
inline constexpr const char* kAllocations = "allocations";  // the /allocations document
inline constexpr const char* kMetrics = "metrics";          // a /metrics snapshot, as text
inline constexpr const char* kKernelLog = "kernelLog";      // {source, lost, note, lines}
inline constexpr const char* kKernelLogSource = "source";
inline constexpr const char* kKernelLogLines = "lines";
// A kernel-log line: {seenAt, device, type, line}.
inline constexpr const char* kLineSeenAt = "seenAt";
inline constexpr const char* kLineDevice = "device";
inline constexpr const char* kLineType = "type";
inline constexpr const char* kLineText = "line";
inline constexpr const char* kDevices = "devices";
// A device: {index, health, ..., driver}.
inline constexpr const char* kDeviceIndex = "index";
inline constexpr const char* kDeviceDriver = "driver";
// The driver's files of a device: {directory, files: {relative path: content}, links, ...}.
inline constexpr const char* kDriverDirectory = "directory";
inline constexpr const char* kDriverFiles = "files";

// ---- the allocations ----
// holders: the device plugin's, {pod, container, resource, ids, cores, devices}.
inline constexpr const char* kHolders = "holders";
inline constexpr const char* kHolderPod = "pod";  // the pod's name
inline constexpr const char* kHolderContainer = "container";
// claims: the DRA driver's prepared claims, {claim, uid, driver, deviceNames, cores, devices, lnc,
// containers: [{pod, container}]}.
inline constexpr const char* kClaims = "claims";
inline constexpr const char* kClaimName = "claim";  // namespace/name
inline constexpr const char* kClaimContainers = "containers";
inline constexpr const char* kClaimUserPod = "pod";  // namespace/name
// Both: the chips (device indices) held.
inline constexpr const char* kHeldDevices = "devices";
inline constexpr const char* kHeldCores = "cores";

}  // namespace torus::contracts::debug_report
