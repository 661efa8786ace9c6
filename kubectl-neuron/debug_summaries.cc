#include "kubectl-neuron/debug_summaries.h"

#include <string>

#include "common/kube/object_fields.h"

namespace torus::kubectl_neuron {
namespace {

using nlohmann::json;

bool neuronKey(const std::string& key) {
  return key.find("torus.dev") != std::string::npos || key.find("neuron") != std::string::npos ||
         key.find("aws.amazon.com") != std::string::npos;
}

json neuronAnnotations(const json& object) {
  json out = json::object();
  for (const auto& [key, value] : kube::stringMapAt(object, {"metadata", "annotations"})) {
    if (neuronKey(key)) out[key] = value;
  }
  return out;
}

}  // namespace

json pick(const json& object, std::initializer_list<const char*> names) {
  json out = json::object();
  if (!object.is_object()) return out;
  for (const char* name : names) {
    if (const auto it = object.find(name); it != object.end()) out[name] = *it;
  }
  return out;
}

json nodeSummary(const json& node) {
  const json& metadata = kube::fieldAt(node, {"metadata"});
  json out = {{"metadata", pick(metadata, {"name", "uid", "creationTimestamp", "labels"})},
              {"spec", pick(kube::fieldAt(node, {"spec"}), {"taints", "unschedulable"})},
              {"status", pick(kube::fieldAt(node, {"status"}),
                              {"conditions", "capacity", "allocatable", "nodeInfo", "addresses"})}};
  out["metadata"]["annotations"] = neuronAnnotations(node);
  return out;
}

json podSummary(const json& pod) {
  json containers = json::array();
  for (const json& container : kube::arrayAt(pod, {"spec", "containers"})) {
    containers.push_back(pick(container, {"name", "image", "resources", "resizePolicy"}));
  }
  json out = {
      {"metadata", pick(kube::fieldAt(pod, {"metadata"}),
                        {"namespace", "name", "uid", "creationTimestamp", "ownerReferences"})},
      {"spec",
       pick(kube::fieldAt(pod, {"spec"}), {"nodeName", "schedulerName", "priority",
                                           "resourceClaims", "tolerations", "restartPolicy"})},
      {"status", pick(kube::fieldAt(pod, {"status"}),
                      {"phase", "reason", "message", "conditions", "containerStatuses",
                       "resourceClaimStatuses", "startTime"})}};
  out["spec"]["containers"] = std::move(containers);
  out["metadata"]["annotations"] = neuronAnnotations(pod);
  // A terminated container's message is what the application wrote at its end (its
  // terminationMessagePath, or its log's tail): the application's data, not the node's state.
  if (json& statuses = out["status"]["containerStatuses"]; statuses.is_array()) {
    for (json& container : statuses) {
      for (const char* state : {"state", "lastState"}) {
        if (!container.is_object() || !container.contains(state)) continue;
        if (json& at = container[state];
            at.is_object() && at.contains("terminated") && at["terminated"].is_object()) {
          at["terminated"].erase("message");
        }
      }
    }
  } else {
    out["status"].erase("containerStatuses");  // not a list: nothing of it is kept
  }
  return out;
}

json claimSummary(const json& claim) {
  json devices = pick(kube::fieldAt(claim, {"spec", "devices"}), {"requests", "constraints"});
  json allocation =
      pick(kube::fieldAt(claim, {"status", "allocation"}), {"nodeSelector", "allocationTimestamp"});
  allocation["devices"] =
      pick(kube::fieldAt(claim, {"status", "allocation", "devices"}), {"results"});
  return {{"metadata", pick(kube::fieldAt(claim, {"metadata"}),
                            {"namespace", "name", "uid", "creationTimestamp", "ownerReferences"})},
          {"spec", {{"devices", std::move(devices)}}},
          {"status",
           {{"allocation", std::move(allocation)},
            {"reservedFor", kube::arrayAt(claim, {"status", "reservedFor"})},
            {"devices", kube::arrayAt(claim, {"status", "devices"})}}}};
}

json eventSummary(const json& event) {
  return pick(event, {"type", "reason", "message", "count", "firstTimestamp", "lastTimestamp",
                      "eventTime", "source", "reportingComponent", "involvedObject"});
}

}  // namespace torus::kubectl_neuron
