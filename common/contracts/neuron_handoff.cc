#include "common/contracts/neuron_handoff.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/contracts/neuron_names.h"
#include "common/kube/object_fields.h"

namespace torus::contracts {

nlohmann::json handoffAnnotations(const Handoff& handoff) {
  nlohmann::json annotations;
  annotations[kNeuronIdsAnnotation] = handoff.ids.toListString();
  annotations[kAllocTimeAnnotation] = std::to_string(handoff.allocTimeNs);
  annotations[kAllocatedAnnotation] = handoff.allocated ? "true" : "false";
  if (!handoff.resourceType.empty()) annotations[kResourceTypeAnnotation] = handoff.resourceType;
  if (handoff.ultraServerNodes) {
    annotations[kUltraServerNodesAnnotation] = std::to_string(*handoff.ultraServerNodes);
  }
  return annotations;
}

Result<std::optional<Handoff>> handoffOf(const nlohmann::json& pod) {
  const std::string idsText = kube::annotationOf(pod, kNeuronIdsAnnotation);
  if (idsText.empty()) return std::optional<Handoff>();
  auto ids = topology::CoreSet::parse(idsText);
  if (!ids || ids->empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     std::string("annotation ") + kNeuronIdsAnnotation + "=" +
                         quoteJsonString(clipForMessage(idsText)) + " is not a list of ids");
  }
  Handoff handoff;
  handoff.ids = std::move(*ids);
  if (auto time = parseInt64(kube::annotationOf(pod, kAllocTimeAnnotation), 0,
                             std::numeric_limits<std::int64_t>::max())) {
    handoff.allocTimeNs = *time;
  }
  handoff.allocated = kube::annotationOf(pod, kAllocatedAnnotation) == "true";
  handoff.resourceType = kube::annotationOf(pod, kResourceTypeAnnotation);
  if (const std::string nodes = kube::annotationOf(pod, kUltraServerNodesAnnotation);
      !nodes.empty()) {
    if (nodes != "1" && nodes != "2" && nodes != "4") {
      return makeError(ErrorCode::kInvalidArgument,
                       std::string("annotation ") + kUltraServerNodesAnnotation + "=" +
                           quoteJsonString(clipForMessage(nodes)) + " is not 1, 2 or 4");
    }
    handoff.ultraServerNodes = nodes[0] - '0';
  }
  return std::optional<Handoff>(std::move(handoff));
}

}  // namespace torus::contracts
