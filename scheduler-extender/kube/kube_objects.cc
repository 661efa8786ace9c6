#include "scheduler-extender/kube/kube_objects.h"

#include <nlohmann/json.hpp>

#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/kube/neuron_annotations.h"
#include "common/kube/neuron_handoff.h"
#include "common/kube/object_fields.h"
#include "common/kube/topology_annotation.h"
#include "scheduler-extender/server/extender_json.h"

namespace torus::extender {
namespace {

using nlohmann::json;

const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string stringMember(const json* object, const char* key) {
  if (object == nullptr) return "";
  const json* value = member(*object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

}  // namespace

Result<NodeRecord> parseNodeRecord(const json& node) {
  const json* metadata = member(node, "metadata");
  NodeRecord record;
  record.name = stringMember(metadata, "name");
  if (record.name.empty()) {
    return makeError(ErrorCode::kInvalidArgument, "node without metadata.name");
  }
  record.instanceType = instanceTypeOf(node);
  const json* labels = metadata != nullptr ? member(*metadata, "labels") : nullptr;
  if (const std::string lnc = stringMember(labels, kube::kLncLabel); !lnc.empty()) {
    if (auto value = parseInt(lnc, 1, 8)) {
      record.lnc = *value;
    } else {
      record.topologyProblem =
          std::string("label ") + kube::kLncLabel + ": " + value.error().message;
    }
  }
  const json* annotations = metadata != nullptr ? member(*metadata, "annotations") : nullptr;
  const std::string topologyText = stringMember(annotations, kube::kTopologyAnnotation);
  if (topologyText.empty()) return record;
  auto summary = kube::parseTopologyAnnotation(topologyText);
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
  const json* metadata = member(pod, "metadata");
  const std::string name =
      stringMember(metadata, "namespace") + "/" + stringMember(metadata, "name");
  auto demand = parsePodObject(pod, "pod " + name);
  if (!demand) return std::move(demand).error();
  PodRecord record;
  record.demand = std::move(*demand);
  record.nodeName = stringMember(member(pod, "spec"), "nodeName");
  const json* status = member(pod, "status");
  record.phase = stringMember(status, "phase");
  record.schedulerName = stringMember(member(pod, "spec"), "schedulerName");
  record.nominatedNodeName = stringMember(status, "nominatedNodeName");
  record.deleting = metadata != nullptr && member(*metadata, "deletionTimestamp") != nullptr;
  if (const json* conditions = status != nullptr ? member(*status, "conditions") : nullptr;
      conditions != nullptr && conditions->is_array()) {
    for (const json& condition : *conditions) {
      if (stringMember(&condition, "type") == "PodScheduled") {
        record.unschedulable = stringMember(&condition, "status") == "False" &&
                               stringMember(&condition, "reason") == "Unschedulable";
      }
    }
  }
  record.allocatedFlag = kube::annotationOf(pod, kube::kAllocatedAnnotation);
  if (auto handoff = kube::handoffOf(pod); !handoff) {
    record.idsProblem = handoff.error().message;
  } else if (*handoff) {
    record.assignedIds = (*handoff)->ids;
  }
  return record;
}

}  // namespace torus::extender
