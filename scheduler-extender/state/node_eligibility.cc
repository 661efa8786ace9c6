#include "scheduler-extender/state/node_eligibility.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/kube/object_fields.h"

namespace torus::extender {
namespace {

using nlohmann::json;

std::optional<std::int64_t> integer(const std::string& value) {
  std::int64_t out = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (error != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return out;
}

bool matches(const NodeSelectorRequirement& requirement, const NodeFacts& node) {
  std::optional<std::string> actual;
  if (requirement.onField) {
    if (requirement.key == "metadata.name") actual = node.name;
  } else if (const auto it = node.labels.find(requirement.key); it != node.labels.end()) {
    actual = it->second;
  }
  const auto listed = [&] {
    return actual && std::ranges::find(requirement.values, *actual) != requirement.values.end();
  };
  const std::string& op = requirement.op;
  if (op == "In") return listed();
  if (op == "NotIn") return !listed();
  if (op == "Exists") return actual.has_value();
  if (op == "DoesNotExist") return !actual.has_value();
  if ((op == "Gt" || op == "Lt") && actual && requirement.values.size() == 1) {
    const auto have = integer(*actual);
    const auto bound = integer(requirement.values.front());
    if (!have || !bound) return false;
    return op == "Gt" ? *have > *bound : *have < *bound;
  }
  return false;  // an operator we do not know matches nothing, as the API server would refuse it
}

}  // namespace

NodeFacts parseNodeFacts(const json& node) {
  NodeFacts facts;
  facts.name = kube::stringAt(node, {"metadata", "name"});
  facts.labels = kube::stringMapAt(node, {"metadata", "labels"});
  const json& unschedulable = kube::fieldAt(node, {"spec", "unschedulable"});
  facts.unschedulable = unschedulable.is_boolean() && unschedulable.get<bool>();
  for (const json& taint : kube::arrayAt(node, {"spec", "taints"})) {
    facts.taints.push_back({kube::stringAt(taint, {"key"}), kube::stringAt(taint, {"value"}),
                            kube::stringAt(taint, {"effect"})});
  }
  return facts;
}

PodNodeRules parsePodNodeRules(const json& pod) {
  PodNodeRules rules;
  rules.nodeSelector = kube::stringMapAt(pod, {"spec", "nodeSelector"});
  for (const json& toleration : kube::arrayAt(pod, {"spec", "tolerations"})) {
    rules.tolerations.push_back(
        {kube::stringAt(toleration, {"key"}), kube::stringAt(toleration, {"operator"}),
         kube::stringAt(toleration, {"value"}), kube::stringAt(toleration, {"effect"})});
  }
  const json& required = kube::fieldAt(
      pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"});
  if (required.is_null()) return rules;
  rules.hasRequiredAffinity = true;
  for (const json& term : kube::arrayAt(required, {"nodeSelectorTerms"})) {
    std::vector<NodeSelectorRequirement>& parsed = rules.requiredTerms.emplace_back();
    for (const auto& [section, onField] :
         {std::pair{"matchExpressions", false}, std::pair{"matchFields", true}}) {
      for (const json& requirement : kube::arrayAt(term, {section})) {
        NodeSelectorRequirement entry{kube::stringAt(requirement, {"key"}),
                                      kube::stringAt(requirement, {"operator"}),
                                      {},
                                      onField};
        for (const json& value : kube::arrayAt(requirement, {"values"})) {
          if (value.is_string()) entry.values.push_back(value.get<std::string>());
        }
        parsed.push_back(std::move(entry));
      }
    }
  }
  return rules;
}

bool tolerates(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::ranges::any_of(tolerations, [&](const Toleration& toleration) {
    if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
    if (toleration.op == "Exists") return toleration.key.empty() || toleration.key == taint.key;
    return toleration.key == taint.key && toleration.value == taint.value;
  });
}

std::string admissionRefusal(const NodeFacts& node, const PodNodeRules& pod) {
  if (node.unschedulable &&
      !tolerates(pod.tolerations, {"node.kubernetes.io/unschedulable", "", "NoSchedule"})) {
    return "node " + node.name + " is cordoned (spec.unschedulable)";
  }
  for (const Taint& taint : node.taints) {
    if ((taint.effect == "NoSchedule" || taint.effect == "NoExecute") &&
        !tolerates(pod.tolerations, taint)) {
      return "the pod does not tolerate node " + node.name + "'s taint " + taint.key +
             (taint.value.empty() ? "" : "=" + taint.value) + ":" + taint.effect;
    }
  }
  for (const auto& [key, value] : pod.nodeSelector) {
    const auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) {
      return "node " + node.name + " does not match the pod's nodeSelector " + key + "=" + value;
    }
  }
  if (!pod.hasRequiredAffinity) return "";
  // Terms are ORed; a term with no requirement matches no node (as kube-scheduler has it).
  const bool matched = std::ranges::any_of(pod.requiredTerms, [&](const auto& term) {
    return !term.empty() && std::ranges::all_of(term, [&](const NodeSelectorRequirement& r) {
      return matches(r, node);
    });
  });
  return matched ? "" : "node " + node.name + " does not match the pod's required node affinity";
}

bool nodeAdmits(const NodeFacts& node, const PodNodeRules& pod) {
  return admissionRefusal(node, pod).empty();
}

}  // namespace torus::extender
