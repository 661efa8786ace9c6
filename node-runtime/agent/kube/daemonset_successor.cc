#include "node-runtime/agent/kube/daemonset_successor.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

namespace torus::agent {
namespace {

using nlohmann::json;

// parent[key] when both are maps; an empty map otherwise (absent, or not a map: the API server
// validates these, and a selector that is not there selects by nothing).
const json& mapAt(const json& parent, const char* key) {
  static const json empty = json::object();
  if (!parent.is_object()) return empty;
  const auto it = parent.find(key);
  return it != parent.end() && it->is_object() ? *it : empty;
}

std::optional<long long> integerOf(const std::string& text) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// One requirement of a term against the value the node has for its key (nullptr: none).
Result<bool> requirementHolds(const json& requirement, const json* actual,
                              const std::string& where) {
  if (!requirement.is_object() || !requirement.contains("operator") ||
      !requirement["operator"].is_string()) {
    return makeError(ErrorCode::kInvalidArgument, where + ": no operator");
  }
  const std::string op = requirement["operator"];
  const json values = requirement.value("values", json::array());
  if (!values.is_array())
    return makeError(ErrorCode::kInvalidArgument, where + ".values: not a list");
  const bool present = actual != nullptr && actual->is_string();
  const std::string value = present ? actual->get<std::string>() : "";
  const auto listed = [&] { return std::ranges::find(values, json(value)) != values.end(); };
  if (op == "In") return present && listed();
  if (op == "NotIn") return !present || !listed();
  if (op == "Exists") return present;
  if (op == "DoesNotExist") return !present;
  if (op == "Gt" || op == "Lt") {
    if (values.size() != 1 || !values[0].is_string() || !integerOf(values[0])) {
      return makeError(ErrorCode::kInvalidArgument, where + ": " + op + " needs one integer value");
    }
    const auto have = present ? integerOf(value) : std::nullopt;
    if (!have) return false;
    const long long limit = *integerOf(values[0]);
    return op == "Gt" ? *have > limit : *have < limit;
  }
  return makeError(ErrorCode::kInvalidArgument, where + ": unknown operator \"" + op + "\"");
}

Result<bool> termHolds(const json& term, const json& labels, const json& fields,
                       const std::string& where) {
  bool any = false;
  for (const auto& [kind, source] :
       {std::pair{"matchExpressions", &labels}, std::pair{"matchFields", &fields}}) {
    const json requirements = term.value(kind, json::array());
    if (!requirements.is_array()) {
      return makeError(ErrorCode::kInvalidArgument, where + "." + kind + ": not a list");
    }
    for (std::size_t i = 0; i < requirements.size(); ++i) {
      const std::string at = where + "." + kind + "[" + std::to_string(i) + "]";
      if (!requirements[i].is_object() || !requirements[i].value("key", json()).is_string()) {
        return makeError(ErrorCode::kInvalidArgument, at + ": no key");
      }
      const std::string key = requirements[i]["key"];
      const json* actual = source->contains(key) ? &(*source)[key] : nullptr;
      auto holds = requirementHolds(requirements[i], actual, at);
      if (!holds) return holds;
      if (!*holds) return false;
      any = true;
    }
  }
  return any;  // an empty term selects no node
}

}  // namespace

Result<bool> templateSelectsNode(const json& daemonSet, const json& node) {
  const json& spec = mapAt(mapAt(mapAt(daemonSet, "spec"), "template"), "spec");
  const json& labels = mapAt(mapAt(node, "metadata"), "labels");
  for (const auto& [key, value] : mapAt(spec, "nodeSelector").items()) {
    if (!labels.contains(key) || labels[key] != value) return false;
  }
  const json& affinity = mapAt(mapAt(spec, "affinity"), "nodeAffinity");
  if (!affinity.contains("requiredDuringSchedulingIgnoredDuringExecution")) return true;
  const json& required = mapAt(affinity, "requiredDuringSchedulingIgnoredDuringExecution");
  const std::string where =
      "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
      "nodeSelectorTerms";
  const json terms = required.value("nodeSelectorTerms", json::array());
  if (!terms.is_array()) return makeError(ErrorCode::kInvalidArgument, where + ": not a list");
  const json& name = mapAt(node, "metadata").value("name", json());
  const json fields = {{"metadata.name", name}};
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (!terms[i].is_object()) {
      return makeError(ErrorCode::kInvalidArgument,
                       where + "[" + std::to_string(i) + "]: not a map");
    }
    auto holds = termHolds(terms[i], labels, fields, where + "[" + std::to_string(i) + "]");
    if (!holds) return holds;
    if (*holds) return true;
  }
  return false;
}

Result<bool> successorExpected(kube::KubeClient& client, const std::string& reference,
                               const std::string& nodeName) {
  const auto slash = reference.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == reference.size()) {
    return makeError(ErrorCode::kInvalidArgument,
                     "DaemonSet \"" + reference + "\": expected NAMESPACE/NAME");
  }
  const std::string path = "/apis/apps/v1/namespaces/" + reference.substr(0, slash) +
                           "/daemonsets/" + reference.substr(slash + 1);
  auto daemonSet = client.get(path);
  if (!daemonSet) {
    if (daemonSet.error().code == ErrorCode::kNotFound) return false;
    return std::move(daemonSet).error().withContext("reading DaemonSet " + reference);
  }
  if (mapAt(*daemonSet, "metadata").contains("deletionTimestamp")) return false;
  auto node = client.get("/api/v1/nodes/" + nodeName);
  if (!node) return std::move(node).error().withContext("reading node " + nodeName);
  auto selects = templateSelectsNode(*daemonSet, *node);
  if (!selects) return std::move(selects).error().withContext("DaemonSet " + reference);
  return selects;
}

}  // namespace torus::agent
