// The kube-scheduler extender wire format (k8s.io/kube-scheduler/extender/v1) <-> our types.
//
// kube-scheduler's structs carry no JSON tags, so it sends Go field names ("Pod", "NodeNames",
// "PodUID") while the embedded Pod and NodeList use Kubernetes camelCase. Go decodes keys
// case-insensitively, so we match the extender's own keys case-insensitively too and always reply
// with the capitalised names. Every parse error names the field and what was wrong; nothing
// throws out of here.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "scheduler-extender/state/pod_demand.h"
#include "scheduler-extender/verbs/verbs.h"

namespace torus::extender {

struct NodeInfo {
  std::string name;
  std::string instanceType;  // node.kubernetes.io/instance-type (or the beta label)
};

struct ExtenderArgs {
  PodDemand pod;
  std::vector<std::string> nodeNames;  // from NodeNames, or from Nodes.items[].metadata.name
  std::vector<NodeInfo> nodes;         // only when the full NodeList was sent
  bool fullNodes = false;              // nodeCacheCapable: false
};

struct BindingArgs {
  std::string podName;
  std::string podNamespace;
  std::string podUid;
  std::string node;
};

struct PreemptionArgs {
  PodDemand pod;
  std::map<std::string, std::vector<std::string>> victimUidsByNode;
  std::map<std::string, int> pdbViolationsByNode;
};

Result<ExtenderArgs> parseExtenderArgs(std::string_view body);
Result<BindingArgs> parseBindingArgs(std::string_view body);
Result<PreemptionArgs> parsePreemptionArgs(std::string_view body);

// fullNodes: answer with "Nodes" (the NodeList kube-scheduler sent, filtered) instead of names.
std::string filterResultJson(const FilterResult& result, std::string_view requestBody,
                             bool fullNodes);
std::string prioritiesJson(const std::vector<HostPriority>& priorities);
std::string bindingResultJson(const std::string& error);
std::string preemptionResultJson(const std::map<std::string, std::vector<std::string>>& victims,
                                 const std::map<std::string, int>& pdbViolations);

}  // namespace torus::extender
