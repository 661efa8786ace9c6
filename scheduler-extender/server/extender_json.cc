#include "scheduler-extender/server/extender_json.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/base/json_fields.h"
#include "common/base/json_nesting.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/contracts/neuron_names.h"
#include "common/kube/quantity.h"

namespace torus::extender {
namespace {

using nlohmann::json;

using contracts::kResourceNames;

// The extender's own keys ("Pod", "NodeNames") are matched case-insensitively, as Go does.
const json* field(const json& object, std::string_view name) {
  if (!object.is_object()) return nullptr;
  const std::string wanted = toLower(name);
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (toLower(it.key()) == wanted) return &it.value();
  }
  return nullptr;
}

// The request's Pod, as kube-scheduler embeds it.
Result<PodDemand> podAt(const json& root) {
  const json* pod = field(root, "Pod");
  if (pod == nullptr) return fieldError("Pod", "missing");
  return parsePodObject(*pod, "Pod");
}

// Every request body is one JSON object.
Result<json> parseObject(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return fieldError("request body", "empty; expected a JSON object");
  }
  if (auto shallow = checkJsonNesting(body); !shallow) {
    return fieldError("request body", shallow.error().message);
  }
  json root;
  try {
    root = json::parse(body.begin(), body.end());
  } catch (const json::exception& error) {
    // parse_error, and out_of_range for numbers beyond a double such as 1e999.
    return fieldError("request body", std::string("not valid JSON (") + error.what() + ")");
  }
  if (!root.is_object())
    return fieldError("request body", "expected an object, got " + jsonTypeName(root));
  return root;
}

}  // namespace

Result<ExtenderArgs> parseExtenderArgs(std::string_view body) {
  auto root = parseObject(body);
  if (!root) return std::move(root).error();
  ExtenderArgs args;
  auto pod = podAt(*root);
  if (!pod) return std::move(pod).error();
  args.pod = std::move(*pod);
  const json* names = field(*root, "NodeNames");
  const json* nodes = field(*root, "Nodes");
  if (names != nullptr && !names->is_null()) {
    if (!names->is_array())
      return fieldError("NodeNames", "expected a list, got " + jsonTypeName(*names));
    for (std::size_t i = 0; i < names->size(); ++i) {
      if (!(*names)[i].is_string()) {
        return fieldError("NodeNames[" + std::to_string(i) + "]",
                          "expected a string, got " + jsonTypeName((*names)[i]));
      }
      args.nodeNames.push_back((*names)[i].get<std::string>());
    }
    return args;
  }
  if (nodes != nullptr && !nodes->is_null()) {
    const auto items = nodes->find("items");
    if (!nodes->is_object() || items == nodes->end() || !items->is_array()) {
      return fieldError("Nodes.items", "expected a NodeList with items");
    }
    args.fullNodes = true;
    for (std::size_t i = 0; i < items->size(); ++i) {
      const json& node = (*items)[i];
      const std::string path = "Nodes.items[" + std::to_string(i) + "]";
      if (!node.is_object()) return fieldError(path, "expected a Node, got " + jsonTypeName(node));
      const auto metadata = node.find("metadata");
      if (metadata == node.end() || !metadata->is_object())
        return fieldError(path + ".metadata", "missing");
      auto name = required<std::string>(*metadata, "name", path + ".metadata");
      if (!name) return std::move(name).error();
      args.nodeNames.push_back(*name);
      args.nodes.push_back({*name, instanceTypeOf(node)});
    }
    return args;
  }
  return fieldError("NodeNames", "missing (neither NodeNames nor Nodes was sent)");
}

Result<BindingArgs> parseBindingArgs(std::string_view body) {
  auto root = parseObject(body);
  if (!root) return std::move(root).error();
  BindingArgs args;
  const std::pair<const char*, std::string*> fields[] = {{"PodName", &args.podName},
                                                         {"PodNamespace", &args.podNamespace},
                                                         {"PodUID", &args.podUid},
                                                         {"Node", &args.node}};
  for (const auto& [name, target] : fields) {
    const json* value = field(*root, name);
    if (value == nullptr || value->is_null()) return fieldError(name, "missing");
    if (!value->is_string())
      return fieldError(name, "expected a string, got " + jsonTypeName(*value));
    *target = value->get<std::string>();
    if (target->empty() && std::string_view(name) != "PodUID") return fieldError(name, "empty");
  }
  return args;
}

Result<PreemptionArgs> parsePreemptionArgs(std::string_view body) {
  auto root = parseObject(body);
  if (!root) return std::move(root).error();
  PreemptionArgs args;
  auto pod = podAt(*root);
  if (!pod) return std::move(pod).error();
  args.pod = std::move(*pod);
  const json* meta = field(*root, "NodeNameToMetaVictims");
  const json* full = field(*root, "NodeNameToVictims");
  const bool useMeta = meta != nullptr && !meta->is_null();
  const json* victims = useMeta ? meta : full;
  const std::string path = useMeta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
  if (victims == nullptr || victims->is_null()) return args;
  if (!victims->is_object())
    return fieldError(path, "expected a map, got " + jsonTypeName(*victims));
  for (auto it = victims->begin(); it != victims->end(); ++it) {
    const std::string nodePath = path + "[\"" + it.key() + "\"]";
    const json* pods = field(it.value(), "Pods");
    if (pods == nullptr || !pods->is_array())
      return fieldError(nodePath + ".Pods", "expected a list");
    std::vector<std::string>& uids = args.victimUidsByNode[it.key()];
    for (std::size_t i = 0; i < pods->size(); ++i) {
      const json& victim = (*pods)[i];
      const std::string victimPath = nodePath + ".Pods[" + std::to_string(i) + "]";
      const json* uid = useMeta ? field(victim, "UID") : nullptr;
      if (!useMeta && victim.is_object()) {
        const auto metadata = victim.find("metadata");
        if (metadata != victim.end() && metadata->is_object()) {
          const auto found = metadata->find("uid");
          if (found != metadata->end()) uid = &*found;
        }
      }
      if (uid == nullptr || !uid->is_string())
        return fieldError(victimPath, "missing the pod's UID");
      uids.push_back(uid->get<std::string>());
    }
    const json* violations = field(it.value(), "NumPDBViolations");
    args.pdbViolationsByNode[it.key()] =
        violations != nullptr && violations->is_number_integer() ? violations->get<int>() : 0;
  }
  return args;
}

std::string filterResultJson(const FilterResult& result, std::string_view requestBody,
                             bool fullNodes) {
  json out = json::object();
  if (fullNodes) {
    json nodes = json::parse(requestBody.begin(), requestBody.end(), nullptr, false);
    json list = field(nodes, "Nodes") != nullptr ? *field(nodes, "Nodes") : json::object();
    json kept = json::array();
    if (list.contains("items") && list["items"].is_array()) {
      for (const json& node : list["items"]) {
        const auto metadata = node.find("metadata");
        const std::string name = metadata != node.end() && metadata->is_object()
                                     ? metadata->value("name", std::string())
                                     : std::string();
        if (std::find(result.nodeNames.begin(), result.nodeNames.end(), name) !=
            result.nodeNames.end()) {
          kept.push_back(node);
        }
      }
    }
    list["items"] = std::move(kept);
    out["Nodes"] = std::move(list);
    out["NodeNames"] = nullptr;
  } else {
    out["Nodes"] = nullptr;
    out["NodeNames"] = result.nodeNames;
  }
  out["FailedNodes"] = result.failed;
  out["FailedAndUnresolvableNodes"] = result.failedAndUnresolvable;
  out["Error"] = result.error;
  return jsonText(out);
}

// Written by hand: a list of 5,000 {Host, Score} objects through the JSON DOM costs several
// milliseconds of allocations, most of the prioritize budget.
std::string prioritiesJson(const std::vector<HostPriority>& priorities) {
  std::string out = "[";
  out.reserve(priorities.size() * 48);
  for (const HostPriority& priority : priorities) {
    if (out.size() > 1) out += ',';
    out += "{\"Host\":";
    out += quoteJsonString(priority.host);
    out += ",\"Score\":";
    out += std::to_string(priority.score);
    out += '}';
  }
  out += ']';
  return out;
}

std::string bindingResultJson(const std::string& error) {
  return jsonText(json{{"Error", error}});
}

std::string preemptionResultJson(const std::map<std::string, std::vector<std::string>>& victims,
                                 const std::map<std::string, int>& pdbViolations) {
  json map = json::object();
  for (const auto& [node, uids] : victims) {
    json pods = json::array();
    for (const std::string& uid : uids)
      pods.push_back({{"UID", uid}});
    const auto violations = pdbViolations.find(node);
    map[node] = {{"Pods", pods},
                 {"NumPDBViolations", violations == pdbViolations.end() ? 0 : violations->second}};
  }
  return jsonText(json{{"NodeNameToMetaVictims", map}});
}

}  // namespace torus::extender
