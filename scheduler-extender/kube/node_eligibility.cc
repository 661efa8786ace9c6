#include "scheduler-extender/kube/node_eligibility.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace torus::extender {
namespace {

using nlohmann::json;

const json* child(const json* object, const char* key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  const auto it = object->find(key);
  return it == object->end() || it->is_null() ? nullptr : &*it;
}

std::string text(const json* object, const char* key) {
  const json* value = child(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

std::map<std::string, std::string> stringMap(const json* object) {
  std::map<std::string, std::string> out;
  if (object == nullptr || !object->is_object()) return out;
  for (auto it = object->begin(); it != object->end(); ++it) {
    if (it->is_string()) out[it.key()] = it->get<std::string>();
  }
  return out;
}

const json* list(const json* object, const char* key) {
  const json* value = child(object, key);
  return value != nullptr && value->is_array() ? value : nullptr;
}

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
  const json* metadata = child(&node, "metadata");
  facts.name = text(metadata, "name");
  facts.labels = stringMap(child(metadata, "labels"));
  const json* spec = child(&node, "spec");
  const json* unschedulable = child(spec, "unschedulable");
  facts.unschedulable =
      unschedulable != nullptr && unschedulable->is_boolean() && unschedulable->get<bool>();
  if (const json* taints = list(spec, "taints")) {
    for (const json& taint : *taints) {
      facts.taints.push_back({text(&taint, "key"), text(&taint, "value"), text(&taint, "effect")});
    }
  }
  return facts;
}

PodNodeRules parsePodNodeRules(const json& pod) {
  PodNodeRules rules;
  const json* spec = child(&pod, "spec");
  rules.nodeSelector = stringMap(child(spec, "nodeSelector"));
  if (const json* tolerations = list(spec, "tolerations")) {
    for (const json& toleration : *tolerations) {
      rules.tolerations.push_back({text(&toleration, "key"), text(&toleration, "operator"),
                                   text(&toleration, "value"), text(&toleration, "effect")});
    }
  }
  const json* required = child(child(child(spec, "affinity"), "nodeAffinity"),
                               "requiredDuringSchedulingIgnoredDuringExecution");
  if (required == nullptr) return rules;
  rules.hasRequiredAffinity = true;
  if (const json* terms = list(required, "nodeSelectorTerms")) {
    for (const json& term : *terms) {
      std::vector<NodeSelectorRequirement>& parsed = rules.requiredTerms.emplace_back();
      for (const auto& [section, onField] :
           {std::pair{"matchExpressions", false}, std::pair{"matchFields", true}}) {
        const json* requirements = list(&term, section);
        if (requirements == nullptr) continue;
        for (const json& requirement : *requirements) {
          NodeSelectorRequirement entry{
              text(&requirement, "key"), text(&requirement, "operator"), {}, onField};
          if (const json* values = list(&requirement, "values")) {
            for (const json& value : *values) {
              if (value.is_string()) entry.values.push_back(value.get<std::string>());
            }
          }
          parsed.push_back(std::move(entry));
        }
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

bool nodeAdmits(const NodeFacts& node, const PodNodeRules& pod) {
  if (node.unschedulable &&
      !tolerates(pod.tolerations, {"node.kubernetes.io/unschedulable", "", "NoSchedule"})) {
    return false;
  }
  for (const Taint& taint : node.taints) {
    if ((taint.effect == "NoSchedule" || taint.effect == "NoExecute") &&
        !tolerates(pod.tolerations, taint)) {
      return false;
    }
  }
  for (const auto& [key, value] : pod.nodeSelector) {
    const auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  if (!pod.hasRequiredAffinity) return true;
  // Terms are ORed; a term with no requirement matches no node (as kube-scheduler has it).
  return std::ranges::any_of(pod.requiredTerms, [&](const auto& term) {
    return !term.empty() && std::ranges::all_of(term, [&](const NodeSelectorRequirement& r) {
      return matches(r, node);
    });
  });
}

}  // namespace torus::extender
