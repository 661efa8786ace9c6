#include "scheduler-extender/kube/kube_objects.h"

#include <atomic>

#include <nlohmann/json.hpp>

#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/contracts/kubelet_view.h"
#include "common/contracts/neuron_handoff.h"
#include "common/contracts/neuron_names.h"
#include "common/contracts/topology_annotation.h"
#include "common/kube/object_fields.h"
#include "common/kube/quantity.h"
#include "scheduler-extender/state/pod_demand.h"

namespace torus::extender {

using nlohmann::json;

namespace {
std::atomic<std::uint64_t> podsRead{0};
}  // namespace

Result<NodeRecord> parseNodeRecord(const json& node) {
  NodeRecord record;
  record.name = kube::stringAt(node, {"metadata", "name"});
  if (record.name.empty()) {
    return makeError(ErrorCode::kInvalidArgument, "node without metadata.name");
  }
  record.instanceType = instanceTypeOf(node);
  if (const std::string lnc = kube::stringAt(node, {"metadata", "labels", contracts::kLncLabel});
      !lnc.empty()) {
    if (auto value = parseInt(lnc, 1, 8)) {
      record.lnc = *value;
    } else {
      record.topologyProblem =
          std::string("label ") + contracts::kLncLabel + ": " + value.error().message;
    }
  }
  if (const std::string told = kube::annotationOf(node, contracts::kKubeletUnavailableAnnotation);
      !told.empty()) {
    if (auto unhealthy = contracts::parseKubeletUnavailable(told)) {
      record.kubeletRefuses = kubeletRefusalOf(*unhealthy);
    } else {
      record.kubeletViewProblem = unhealthy.error().message;
      record.kubeletRefuses.everything = true;
    }
  }
  // From the moment a stopping agent taints its node until the next one removes the taint,
  // kubelet counts none of our ids: nothing there is offered, and a bind already on its way when
  // the taint arrived is refused here (the pod waits) rather than bound into the gap.
  if (contracts::hasRestartingTaint(node)) record.kubeletRefuses.everything = true;
  for (const std::string_view resource :
       {contracts::kNeuronCoreResource, contracts::kNeuronResource}) {
    const std::string quantity =
        kube::stringAt(node, {"status", "allocatable", std::string(resource).c_str()});
    if (!quantity.empty() && kube::wholeQuantity(quantity, 1, 1 << 20)) {
      record.kubeletAdvertisesNeuron = true;
    }
  }
  record.facts = parseNodeFacts(node);
  record.domains = nodeDomainsFromLabels(node);
  const std::string topologyText = kube::annotationOf(node, contracts::kTopologyAnnotation);
  if (topologyText.empty()) return record;
  auto summary = contracts::parseTopologyAnnotation(topologyText);
  if (!summary) {
    record.topologyProblem = summary.error().message;
    return record;
  }
  if (record.instanceType.empty()) record.instanceType = summary->instanceType;
  record.lnc = summary->lnc;
  record.unhealthy = summary->unhealthy;
  record.topology = std::move(*summary);
  return record;
}

Result<PodRecord> parsePodRecord(const json& pod) {
  podsRead.fetch_add(1, std::memory_order_relaxed);
  const std::string name = kube::stringAt(pod, {"metadata", "namespace"}) + "/" +
                           kube::stringAt(pod, {"metadata", "name"});
  auto demand = parsePodObject(pod, "pod " + name);
  if (!demand) return std::move(demand).error();
  PodRecord record;
  record.demand = std::move(*demand);
  record.nodeName = kube::stringAt(pod, {"spec", "nodeName"});
  record.phase = kube::stringAt(pod, {"status", "phase"});
  record.schedulerName = kube::stringAt(pod, {"spec", "schedulerName"});
  record.nominatedNodeName = kube::stringAt(pod, {"status", "nominatedNodeName"});
  record.deleting = !kube::fieldAt(pod, {"metadata", "deletionTimestamp"}).is_null();
  if (const json& conditions = kube::fieldAt(pod, {"status", "conditions"});
      conditions.is_array()) {
    for (const json& condition : conditions) {
      if (kube::stringAt(condition, {"type"}) == "PodScheduled") {
        record.unschedulable = kube::stringAt(condition, {"status"}) == "False" &&
                               kube::stringAt(condition, {"reason"}) == "Unschedulable";
      }
    }
  }
  record.allocatedFlag = kube::annotationOf(pod, contracts::kAllocatedAnnotation);
  if (auto handoff = contracts::handoffOf(pod); !handoff) {
    record.idsProblem = handoff.error().message;
  } else if (*handoff) {
    record.assignedIds = (*handoff)->ids;
  }
  if (record.demand.wantsNeuron() && record.nodeName.empty() && !record.deleting) {
    record.nodeRules = parsePodNodeRules(pod);
  }
  return record;
}

NodeUpdate parseNodeUpdate(const json& node, bool deleted) {
  NodeUpdate update;
  update.name = kube::stringAt(node, {"metadata", "name"});
  update.deleted = deleted;
  if (deleted) return update;
  if (auto record = parseNodeRecord(node)) {
    update.record = std::move(*record);
  } else {
    update.problem = record.error().message;
  }
  return update;
}

PodUpdate parsePodUpdate(const json& pod, bool deleted) {
  PodUpdate update;
  update.uid = kube::stringAt(pod, {"metadata", "uid"});
  update.key = kube::stringAt(pod, {"metadata", "namespace"}) + "/" +
               kube::stringAt(pod, {"metadata", "name"});
  update.deleted = deleted;
  if (deleted) return update;
  if (auto record = parsePodRecord(pod)) {
    update.record = std::move(*record);
  } else {
    update.problem = record.error().message;
  }
  return update;
}

std::uint64_t podObjectsRead() {
  return podsRead.load(std::memory_order_relaxed);
}

}  // namespace torus::extender
