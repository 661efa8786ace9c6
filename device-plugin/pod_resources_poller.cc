#include "device-plugin/pod_resources_poller.h"

#include "common/base/log.h"

namespace torus::plugin {
namespace {

constexpr ResourceKind kKinds[] = {ResourceKind::kNeuronCore, ResourceKind::kNeuron,
                                   ResourceKind::kNeuronDevice};

}  // namespace

Assignments assignmentsFromRows(const std::vector<kubelet::ContainerDevices>& rows,
                                const topology::Node& node) {
  Assignments assignments;
  for (const kubelet::ContainerDevices& row : rows) {
    for (const ResourceKind kind : kKinds) {
      if (row.resourceName != resourceName(kind)) continue;
      const std::string pod = row.podNamespace + "/" + row.pod;
      auto parsed = parseIds(kind, node, row.deviceIds);
      if (!parsed) {
        // Ids from before an LNC change or another plugin's numbering: not ours to track.
        TORUS_LOG(Warn, Plugin, "ignoring ids kubelet lists for a container", {"pod", pod},
                  {"container", row.container}, {"error", parsed.error().message});
        continue;
      }
      assignments.held[kind] |= *parsed;
      assignments.holders.push_back({pod, row.container, kind, *parsed});
    }
  }
  return assignments;
}

PodResourcesPoller::PodResourcesPoller(std::string socket, std::chrono::milliseconds interval,
                                       kubelet::NodeView& node, AssignmentTracker& tracker,
                                       std::function<bool()> answered,
                                       kubelet::AllocationWindow* window)
    : node_(node),
      tracker_(tracker),
      answered_(std::move(answered)),
      poll_({std::move(socket), interval, log::Component::kPlugin,
             "cross-resource accounting uses only this agent's own Allocate calls until it "
             "answers",
             window},
            [this](kubelet::PodResourcesRows&& rows) { return replace(std::move(rows)); }) {}

Result<Assignments> PodResourcesPoller::listNow(std::chrono::milliseconds wait) {
  auto rows = poll_.listNow(wait);
  if (!rows) return std::move(rows).error();
  return assignmentsFromRows(rows->devices, node_.snapshot().node);
}

bool PodResourcesPoller::replace(kubelet::PodResourcesRows&& rows) {
  tracker_.replaceFromKubelet(assignmentsFromRows(rows.devices, node_.snapshot().node));
  return answered_ ? answered_() : false;
}

}  // namespace torus::plugin
