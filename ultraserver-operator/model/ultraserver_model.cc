#include "ultraserver-operator/model/ultraserver_model.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/contracts/neuron_names.h"
#include "common/contracts/ultraserver_labels.h"
#include "common/kube/object_fields.h"

namespace torus::ultraserver {
namespace {

using json = nlohmann::json;
using kube::fieldAt;
using kube::stringAt;

std::string labelOf(const json& object, const std::string& key) {
  const json& labels = fieldAt(object, {"metadata", "labels"});
  if (!labels.is_object()) return "";
  const auto found = labels.find(key);
  return found != labels.end() && found->is_string() ? found->get<std::string>() : "";
}

// The condition `type` of `object`; null when it has none.
const json& conditionOf(const json& object, const char* type) {
  static const json kNone;
  const json& conditions = fieldAt(object, {"status", "conditions"});
  if (!conditions.is_array()) return kNone;
  for (const json& condition : conditions) {
    if (condition.is_object() && condition.value("type", json()) == type) return condition;
  }
  return kNone;
}

// Whether a request of `claim` tolerates the reserved taint (NoSchedule), in `exactly` or in any
// `firstAvailable` alternative.
bool toleratesReservation(const json& claim) {
  const auto tolerates = [](const json& tolerations) {
    for (const json& toleration : kube::arrayAt(tolerations, {})) {
      const std::string key = stringAt(toleration, {"key"});
      const std::string effect = stringAt(toleration, {"effect"});
      const bool keyMatches = key == contracts::kReservedTaintKey ||
                              (key.empty() && stringAt(toleration, {"operator"}) == "Exists");
      if (keyMatches && (effect.empty() || effect == "NoSchedule")) return true;
    }
    return false;
  };
  for (const json& request : kube::arrayAt(claim, {"spec", "devices", "requests"})) {
    if (tolerates(fieldAt(request, {"exactly", "tolerations"}))) return true;
    for (const json& alternative : kube::arrayAt(request, {"firstAvailable"})) {
      if (tolerates(fieldAt(alternative, {"tolerations"}))) return true;
    }
  }
  return false;
}

}  // namespace

std::optional<MemberNode> memberOf(const json& node) {
  const auto position = contracts::positionOf(fieldAt(node, {"metadata", "labels"}));
  MemberNode member;
  member.name = stringAt(node, {"metadata", "name"});
  if (member.name.empty() || !position || position->serverId4.empty() || position->nodeId4 < 0) {
    return std::nullopt;
  }
  member.serverId = position->serverId4;
  member.pairId = contracts::pairOf(*position);
  member.nodeId = position->nodeId4;
  member.instanceType = labelOf(node, contracts::kInstanceTypeLabel);
  if (member.instanceType.empty())
    member.instanceType = labelOf(node, contracts::kTorusInstanceTypeLabel);
  const json& ready = conditionOf(node, "Ready");
  member.ready = stringAt(ready, {"status"}) == "True";
  if (!member.ready) member.notReadySince = stringAt(ready, {"lastTransitionTime"});
  member.schedulable = fieldAt(node, {"spec", "unschedulable"}) != json(true);
  return member;
}

std::map<std::string, BusyNode> nodesBusyWithClaims(
    const std::map<std::string, std::shared_ptr<const json>>& claims) {
  std::map<std::string, BusyNode> busy;
  for (const auto& [key, claim] : claims) {
    if (!kube::annotationOf(*claim, contracts::kWorkloadAnnotation).empty()) continue;
    const bool beforeTaint = !toleratesReservation(*claim);
    for (const json& result :
         kube::arrayAt(*claim, {"status", "allocation", "devices", "results"})) {
      if (kube::stringAt(result, {"driver"}) != contracts::kDraDriverName) continue;
      const json& admin = kube::fieldAt(result, {"adminAccess"});
      if (admin.is_boolean() && admin.get<bool>()) continue;
      const std::string node = kube::stringAt(result, {"pool"});
      if (node.empty()) continue;
      if (const auto found = busy.find(node);
          found != busy.end() && (found->second.beforeTaint || !beforeTaint)) {
        continue;
      }
      std::string since = kube::stringAt(*claim, {"status", "allocation", "allocationTimestamp"});
      if (since.empty()) since = kube::stringAt(*claim, {"metadata", "creationTimestamp"});
      busy[node] = {"ResourceClaim " + kube::stringAt(*claim, {"metadata", "namespace"}) + "/" +
                        kube::stringAt(*claim, {"metadata", "name"}),
                    beforeTaint, std::move(since)};
    }
  }
  return busy;
}

std::set<std::string> podsOfWorkload(
    const std::map<std::string, std::shared_ptr<const json>>& claims, const Workload& workload) {
  std::set<std::string> pods;
  for (const auto& [key, claim] : claims) {
    if (kube::stringAt(*claim, {"metadata", "namespace"}) != workload.nameSpace ||
        kube::annotationOf(*claim, contracts::kWorkloadAnnotation) != workload.ref()) {
      continue;
    }
    for (const json& owner : kube::arrayAt(*claim, {"metadata", "ownerReferences"})) {
      if (kube::stringAt(owner, {"kind"}) == "Pod" && kube::stringAt(owner, {"apiVersion"}) == "v1")
        pods.insert(kube::stringAt(owner, {"uid"}));
    }
  }
  pods.erase("");
  return pods;
}

std::string ultraServerName(const std::string& serverId) {
  return "us-" + toLower(serverId);
}

std::vector<UltraServer> groupUltraServers(std::vector<MemberNode> members) {
  std::map<std::string, UltraServer> byName;
  for (MemberNode& member : members) {
    UltraServer& server = byName[ultraServerName(member.serverId)];
    server.name = ultraServerName(member.serverId);
    server.serverId = member.serverId;
    if (server.instanceType.empty()) server.instanceType = member.instanceType;
    server.nodes.push_back(std::move(member));
  }
  std::vector<UltraServer> servers;
  for (auto& [name, server] : byName) {
    std::sort(server.nodes.begin(), server.nodes.end(),
              [](const MemberNode& a, const MemberNode& b) {
                return a.nodeId != b.nodeId ? a.nodeId < b.nodeId : a.name < b.name;
              });
    servers.push_back(std::move(server));
  }
  return servers;
}

}  // namespace torus::ultraserver
