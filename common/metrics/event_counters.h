// EventCounters: process-wide counters of things that happened (allocations, resets,
// registrations, health transitions), incremented where they happen and read by /metrics. A
// process-wide registry, as Prometheus client libraries keep, so the device plugin and the
// runtime need no metrics plumbing through their interfaces.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/metrics/prometheus_text.h"

namespace torus::metrics {

class EventCounters {
 public:
  void add(std::string_view family, const Labels& labels, double amount = 1);
  double value(std::string_view family, const Labels& labels) const;
  // The family as a Prometheus counter: HELP and TYPE always, a sample per label set counted.
  void render(PrometheusText& out, std::string_view family, std::string_view help) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::map<Labels, double>, std::less<>> values_;
};

EventCounters& processCounters();

// The node agent's event counters (incremented in device-plugin and node-runtime, rendered by
// node-runtime/metrics).
namespace names {
inline constexpr const char* kAllocationsTotal = "torus_plugin_allocations_total";
inline constexpr const char* kAllocateErrorsTotal = "torus_plugin_allocate_errors_total";
inline constexpr const char* kPreferredTotal = "torus_plugin_preferred_allocations_total";
inline constexpr const char* kPromisesRefusedTotal = "torus_plugin_handoff_promises_refused_total";
inline constexpr const char* kRegistrationsTotal = "torus_plugin_registrations_total";
inline constexpr const char* kResetsTotal = "torus_device_resets_total";
inline constexpr const char* kReleaseResetsTotal = "torus_device_release_resets_total";
inline constexpr const char* kHealthTransitionsTotal = "torus_device_health_transitions_total";
inline constexpr const char* kKernelErrorsTotal = "torus_kernel_hardware_errors_total";
inline constexpr const char* kKernelErrorsActedOnTotal =
    "torus_kernel_hardware_errors_acted_on_total";
inline constexpr const char* kDeepCheckRunsTotal = "torus_deep_check_runs_total";
inline constexpr const char* kRecoveriesTotal = "torus_device_recoveries_total";
inline constexpr const char* kDraPrepareTotal = "torus_dra_prepare_total";
inline constexpr const char* kDraUnprepareTotal = "torus_dra_unprepare_total";
inline constexpr const char* kDraSlicePublishTotal = "torus_dra_slice_publish_total";
inline constexpr const char* kDraUnresetCoresTotal = "torus_dra_cores_handed_on_unreset_total";
inline constexpr const char* kDraOverlapsRefusedTotal =
    "torus_dra_overlapping_claims_refused_total";
inline constexpr const char* kDraUnprepareHeldTotal = "torus_dra_unprepares_held_total";
inline constexpr const char* kDoubleAllocationsTotal = "torus_kubelet_double_allocations_total";
inline constexpr const char* kListsHeldTotal = "torus_pod_resources_lists_held_total";
inline constexpr const char* kListsHeldSecondsTotal =
    "torus_pod_resources_lists_held_seconds_total";

// The scheduler extender: how each filter of a gang's member ended (scheduler-extender/verbs).
inline constexpr const char* kGangFiltersTotal = "torus_extender_gang_filters_total";
inline constexpr const char* kGangFiltersHelp =
    "Filters of gang members by outcome: placed (the whole gang reserved now), on_its_node (a "
    "placed member passed on its node), incomplete (not every member exists yet), not_whole (the "
    "gang fits nowhere whole; nothing held), moved (a member whose planned node was not offered "
    "moved to an offered one in its gang's domain), node_not_offered (nor could it move), raced "
    "(another reservation came first), invalid (labels or PodGroup wrong).";

// Both daemons: connections their HTTP servers cut (common/http/connection_reaper.h), by reason.
inline constexpr const char* kHttpConnectionsCutTotal = "torus_http_connections_cut_total";
inline constexpr const char* kHttpConnectionsCutHelp =
    "Connections the HTTP server cut, by reason: deadline (a request not whole within the "
    "request deadline), bytes (over the per-request byte budget), cap (one connection too many).";
}  // namespace names

}  // namespace torus::metrics
