#include "ultraserver-operator/model/operator_objects.h"

#include "common/base/strings.h"
#include "common/contracts/dra_names.h"
#include "common/contracts/neuron_names.h"
#include "common/contracts/opaque_config.h"
#include "common/contracts/ultraserver_labels.h"
#include "common/kube/object_fields.h"

namespace torus::ultraserver {
namespace {

using json = nlohmann::json;

// A metav1.Condition; its lastTransitionTime is the stored one while the status holds.
json condition(const char* type, bool status, const std::string& reason, const std::string& message,
               std::int64_t generation, const json& previous, const std::string& now) {
  const std::string statusText = status ? "True" : "False";
  std::string since = now;
  const json& stored = kube::fieldAt(previous, {"conditions"});
  if (stored.is_array()) {
    for (const json& item : stored) {
      if (item.is_object() && item.value("type", json()) == type &&
          item.value("status", json()) == statusText &&
          item.value("lastTransitionTime", json()).is_string()) {
        since = item["lastTransitionTime"].get<std::string>();
      }
    }
  }
  json result = {{"type", type},
                 {"status", statusText},
                 {"reason", reason.empty() ? std::string("None") : reason},
                 {"message", message},
                 {"lastTransitionTime", since}};
  if (generation > 0) result["observedGeneration"] = generation;
  return result;
}

}  // namespace

std::string claimTemplatePath(const std::string& nameSpace, const std::string& name) {
  return "/apis/resource.k8s.io/v1/namespaces/" + nameSpace + "/resourceclaimtemplates" +
         (name.empty() ? "" : "/" + name);
}

json ultraServerSpec(const UltraServer& server) {
  json topology = json::array();
  for (const MemberNode& node : server.nodes) {
    const char* link = node.ready ? "up" : "down";
    topology.push_back({{"nodeId", node.nodeId},
                        {"nodeName", node.name},
                        {"linkStatusHorizontal", link},
                        {"linkStatusVertical", link}});
  }
  return {
      {"instanceType", server.instanceType.empty() ? std::string("unknown") : server.instanceType},
      {"topology", topology}};
}

json ultraServerObject(const UltraServer& server, const std::string& nameSpace) {
  return {{"apiVersion", contracts::kUltraServerApiVersion},
          {"kind", contracts::kUltraServerKind},
          {"metadata",
           {{"name", server.name},
            {"namespace", nameSpace},
            {"labels",
             {{"app.kubernetes.io/managed-by", "neuron-ultraserver-operator"},
              {std::string(contracts::kUltraServerIdLabel), server.serverId}}}}},
          {"spec", ultraServerSpec(server)}};
}

json ultraServerStatus(const UltraServer& server, const std::vector<Allocation>& allocations,
                       const json& previous, const std::string& now) {
  std::vector<std::string> down;
  for (const MemberNode& node : server.nodes) {
    if (!node.healthy()) down.push_back(node.name);
  }
  json items = json::array();
  int held = 0;
  std::vector<std::string> holders;
  for (const Allocation& allocation : allocations) {
    if (allocation.ultraServer != server.name) continue;
    held += static_cast<int>(allocation.nodes.size());
    holders.push_back(allocation.workloadRef);
    items.push_back(contracts::allocationEntry(allocation));
  }
  const bool ready = down.empty() && server.nodes.size() == 4;
  std::string readyMessage =
      ready ? "all 4 nodes Ready"
            : std::to_string(server.nodes.size() - down.size()) + " of " +
                  std::to_string(server.nodes.size()) + " nodes in the cluster are Ready" +
                  (down.empty() ? "" : " (not: " + joinStrings(down, ", ") + ")");
  return {{"state", ready ? "Ready" : "Degraded"},
          {"allocations", items},
          {"conditions",
           json::array({condition("Ready", ready, ready ? "AllNodesReady" : "NodesNotReady",
                                  readyMessage, 0, previous, now),
                        condition("Allocated", held > 0, held > 0 ? "WorkloadsHoldNodes" : "Free",
                                  held > 0 ? std::to_string(held) + " node(s) held by " +
                                                 joinStrings(holders, ", ")
                                           : "no workload holds a node",
                                  0, previous, now)})}};
}

json workloadStatus(const Workload& workload, const WorkloadOutcome& outcome, const json& previous,
                    const std::string& now) {
  const bool allocated = outcome.state == WorkloadState::kAllocated;
  const bool progressing =
      outcome.state == WorkloadState::kAllocating || outcome.state == WorkloadState::kDeallocating;
  const bool degraded = outcome.degraded || outcome.state == WorkloadState::kPartiallyAllocated;
  json status = {
      {"state", contracts::workloadStateName(outcome.state)},
      {"allocatedUltraServers", outcome.allocatedUltraServers},
      {"observedGeneration", workload.generation},
      {"conditions",
       json::array(
           {condition("Ready", allocated, outcome.reason, outcome.message, workload.generation,
                      previous, now),
            condition("Progressing", progressing, progressing ? outcome.reason : "Idle",
                      progressing ? outcome.message : "", workload.generation, previous, now),
            condition(
                "Degraded", degraded,
                outcome.degraded ? outcome.degradedReason : (degraded ? outcome.reason : "Healthy"),
                outcome.degraded ? outcome.degradedMessage : (degraded ? outcome.message : ""),
                workload.generation, previous, now)})}};
  if (!outcome.allocatedAt.empty()) status["allocatedAt"] = outcome.allocatedAt;
  return status;
}

json claimTemplate(const Workload& workload) {
  const std::string domain = contracts::kDraDriverName.data();
  const std::string attributes = "device.attributes[\"" + domain + "\"]";
  const std::string selector = attributes + ".resourceType == \"" + std::string(dra::kTypeNode) +
                               "\" && \"" + contracts::kWorkloadIdAttribute + "\" in " +
                               attributes + " && " + attributes + "." +
                               contracts::kWorkloadIdAttribute + " == \"" + workload.ref() + "\"";
  json request = {{"name", "neurons"}};
  request["exactly"]["deviceClassName"] = domain;
  request["exactly"]["selectors"] = json::array({{{"cel", {{"expression", selector}}}}});
  request["exactly"]["tolerations"] = json::array(
      {{{"key", contracts::kReservedTaintKey}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  json devices;
  devices["requests"] = json::array({request});
  devices["config"] = json::array();
  for (json& parameters :
       contracts::opaqueParameters({.logicalNeuronCore = workload.logicalNeuronCore,
       .ultraServerMode = workload.topologySize})) {
    devices["config"].push_back(
        {{"requests", json::array({"neurons"})},
         {"opaque", {{"driver", domain}, {"parameters", std::move(parameters)}}}});
  }

  json object = {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaimTemplate"}};
  object["metadata"] = {
      {"name", workload.claimTemplate},
      {"namespace", workload.nameSpace},
      {"labels", {{"app.kubernetes.io/managed-by", "neuron-ultraserver-operator"}}},
      {"ownerReferences", json::array({{{"apiVersion", contracts::kUltraServerApiVersion},
                                        {"kind", contracts::kWorkloadKind},
                                        {"name", workload.name},
                                        {"uid", workload.uid},
                                        {"controller", true},
                                        {"blockOwnerDeletion", true}}})}};
  object["spec"]["metadata"]["annotations"][contracts::kWorkloadAnnotation] = workload.ref();
  object["spec"]["spec"]["devices"] = std::move(devices);
  return object;
}

}  // namespace torus::ultraserver
