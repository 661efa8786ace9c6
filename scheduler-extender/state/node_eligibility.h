// Whether kube-scheduler's node filters — NodeUnschedulable, NodeAffinity (nodeSelector and the
// required node affinity), TaintToleration — would let a pod onto a node. The extender's own
// preemption evicts only on nodes that pass them, and bind re-checks them; resource fit is judged
// elsewhere. Parsed from the objects as the API returns them; fields that are missing or malformed
// read as absent (a malformed rule matches nothing, so it never makes a node eligible).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace torus::extender {

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // only NoSchedule and NoExecute keep pods off
};

struct NodeFacts {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool unschedulable = false;  // spec.unschedulable (cordoned)
};

struct Toleration {
  std::string key;
  std::string op;  // Exists or Equal ("" means Equal)
  std::string value;
  std::string effect;  // "" tolerates every effect
};

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
  bool onField = false;  // matchFields (metadata.name) rather than matchExpressions
};

struct PodNodeRules {
  std::map<std::string, std::string> nodeSelector;
  // requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: any term, all of its
  // requirements. Empty: no required affinity.
  std::vector<std::vector<NodeSelectorRequirement>> requiredTerms;
  bool hasRequiredAffinity = false;
  std::vector<Toleration> tolerations;
};

NodeFacts parseNodeFacts(const nlohmann::json& node);
PodNodeRules parsePodNodeRules(const nlohmann::json& pod);

bool tolerates(const std::vector<Toleration>& tolerations, const Taint& taint);
bool nodeAdmits(const NodeFacts& node, const PodNodeRules& pod);
// Why the node does not admit the pod, naming the first rule that keeps it off; "" when it does.
std::string admissionRefusal(const NodeFacts& node, const PodNodeRules& pod);

}  // namespace torus::extender
