#include "scheduler-extender/server/extender_json.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/base/json_nesting.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/contracts/neuron_names.h"
#include "common/kube/quantity.h"

namespace torus::extender {
namespace {

using nlohmann::json;

using contracts::kResourceNames;

Error bad(const std::string& field, const std::string& why) {
  return makeError(ErrorCode::kInvalidArgument, field + ": " + why);
}

std::string typeName(const json& value) {
  return value.type_name();
}

// The extender's own keys ("Pod", "NodeNames") are matched case-insensitively, as Go does.
const json* field(const json& object, std::string_view name) {
  if (!object.is_object()) return nullptr;
  const std::string wanted = toLower(name);
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (toLower(it.key()) == wanted) return &it.value();
  }
  return nullptr;
}

// Every request body is one JSON object.
Result<json> parseObject(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return bad("request body", "empty; expected a JSON object");
  }
  if (auto shallow = checkJsonNesting(body); !shallow) {
    return bad("request body", shallow.error().message);
  }
  json root;
  try {
    root = json::parse(body.begin(), body.end());
  } catch (const json::exception& error) {
    // parse_error, and out_of_range for numbers beyond a double such as 1e999.
    return bad("request body", std::string("not valid JSON (") + error.what() + ")");
  }
  if (!root.is_object()) return bad("request body", "expected an object, got " + typeName(root));
  return root;
}

Result<std::string> stringAt(const json& object, std::string_view key, const std::string& path,
                             bool required) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) return bad(path + "." + std::string(key), "missing");
    return std::string();
  }
  if (!it->is_string()) {
    return bad(path + "." + std::string(key), "expected a string, got " + typeName(*it));
  }
  return it->get<std::string>();
}

// A Kubernetes quantity for an extended resource: a whole number, sent as a string or a number.
Result<int> wholeQuantity(const json& value, const std::string& path) {
  if (value.is_number_unsigned() || value.is_number_integer()) {
    const auto number = value.get<std::int64_t>();
    if (number < 0 || number > 4096) return bad(path, "expected 0..4096, got " + jsonText(value));
    return static_cast<int>(number);
  }
  if (!value.is_string()) return bad(path, "expected a quantity, got " + typeName(value));
  auto count = kube::wholeQuantity(value.get<std::string>(), 0, 4096);
  if (!count) return bad(path, count.error().message);
  return static_cast<int>(*count);
}

// Per resource, what one container asks for: requests, or limits when requests are absent.
Result<std::map<std::string, int>> containerAsks(const json& container, const std::string& path) {
  std::map<std::string, int> asks;
  if (!container.is_object()) return bad(path, "expected an object, got " + typeName(container));
  const auto resources = container.find("resources");
  if (resources == container.end() || resources->is_null()) return asks;
  if (!resources->is_object()) {
    return bad(path + ".resources", "expected an object, got " + typeName(*resources));
  }
  for (const char* section : {"limits", "requests"}) {  // requests win: read them last
    const auto map = resources->find(section);
    if (map == resources->end() || map->is_null()) continue;
    if (!map->is_object()) {
      return bad(path + ".resources." + section, "expected an object, got " + typeName(*map));
    }
    for (const std::string_view name : kResourceNames) {
      const auto value = map->find(name);
      if (value == map->end()) continue;
      auto count =
          wholeQuantity(*value, path + ".resources." + section + "[\"" + std::string(name) + "\"]");
      if (!count) return std::move(count).error();
      asks[std::string(name)] = *count;
    }
  }
  return asks;
}

// The pod's gang from its labels. A malformed gang is the pod's problem, not the request's: the
// pod is still read (its devices are still counted once bound) and filter says what is wrong.
void readGang(const json& metadata, PodDemand& demand) {
  const auto labels = metadata.find("labels");
  if (labels == metadata.end() || !labels->is_object()) return;
  const auto name = labels->find(contracts::kGangLabel);
  const auto size = labels->find(contracts::kGangSizeLabel);
  const bool hasName =
      name != labels->end() && name->is_string() && !name->get_ref<const std::string&>().empty();
  const bool hasSize = size != labels->end() && size->is_string();
  if (!hasName && !hasSize) return;
  if (!hasName) {
    demand.gangProblem = std::string("label ") + contracts::kGangSizeLabel + " is set but " +
                         contracts::kGangLabel + " (the gang's name) is not";
    return;
  }
  if (!hasSize) {
    demand.gangProblem = std::string("label ") + contracts::kGangLabel + " is set but " +
                         contracts::kGangSizeLabel + " (how many pods the gang has) is not";
    return;
  }
  auto count = parseInt(size->get_ref<const std::string&>(), 1, contracts::kMaxGangSize);
  if (!count) {
    demand.gangProblem =
        std::string("label ") + contracts::kGangSizeLabel + ": " + count.error().message;
    return;
  }
  demand.gang = GangRef{name->get<std::string>(), *count};
}

Result<PodDemand> parsePod(const json* pod, const std::string& path) {
  if (pod == nullptr || pod->is_null()) return bad(path, "missing");
  if (!pod->is_object()) return bad(path, "expected a Pod object, got " + typeName(*pod));
  PodDemand demand;
  const auto metadata = pod->find("metadata");
  if (metadata == pod->end() || !metadata->is_object()) return bad(path + ".metadata", "missing");
  auto name = stringAt(*metadata, "name", path + ".metadata", true);
  if (!name) return std::move(name).error();
  auto ns = stringAt(*metadata, "namespace", path + ".metadata", false);
  if (!ns) return std::move(ns).error();
  auto uid = stringAt(*metadata, "uid", path + ".metadata", false);
  if (!uid) return std::move(uid).error();
  demand.name = *name;
  demand.namespace_ = ns->empty() ? "default" : *ns;
  demand.uid = *uid;
  readGang(*metadata, demand);
  const auto spec = pod->find("spec");
  if (spec == pod->end() || !spec->is_object()) return bad(path + ".spec", "missing");
  if (const auto group = spec->find("schedulingGroup");
      group != spec->end() && group->is_object()) {
    const auto groupName = group->find("podGroupName");
    if (groupName != group->end() && groupName->is_string()) {
      demand.podGroup = groupName->get<std::string>();
    }
  }
  if (const auto priority = spec->find("priority");
      priority != spec->end() && !priority->is_null()) {
    if (!priority->is_number_integer()) {
      return bad(path + ".spec.priority", "expected an integer, got " + typeName(*priority));
    }
    const bool inRange =
        priority->is_number_unsigned()
            ? priority->get<std::uint64_t>() <= std::numeric_limits<std::int32_t>::max()
            : std::in_range<std::int32_t>(priority->get<std::int64_t>());
    if (!inRange)
      return bad(path + ".spec.priority", priority->dump() + " is not a 32-bit integer");
    demand.priority = priority->get<int>();
  }
  std::map<std::string, int> total;
  std::map<std::string, int> initMax;
  for (const char* list : {"containers", "initContainers"}) {
    const auto containers = spec->find(list);
    if (containers == spec->end() || containers->is_null()) continue;
    if (!containers->is_array()) {
      return bad(path + ".spec." + list, "expected a list, got " + typeName(*containers));
    }
    for (std::size_t i = 0; i < containers->size(); ++i) {
      auto asks =
          containerAsks((*containers)[i], path + ".spec." + list + "[" + std::to_string(i) + "]");
      if (!asks) return std::move(asks).error();
      for (const auto& [resource, count] : *asks) {
        if (std::string_view(list) == "containers") {
          total[resource] += count;
        } else {
          initMax[resource] = std::max(initMax[resource], count);
        }
      }
    }
  }
  for (const auto& [resource, count] : initMax)
    total[resource] = std::max(total[resource], count);
  std::erase_if(total, [](const auto& entry) { return entry.second == 0; });
  if (total.size() > 1) {
    std::vector<std::string> names;
    for (const auto& [resource, count] : total)
      names.push_back(resource);
    return bad(path, "asks for " + joinStrings(names, " and ") +
                         "; a pod can take Neuron cores or whole devices, not both");
  }
  if (!total.empty()) {
    demand.resourceName = total.begin()->first;
    demand.count = total.begin()->second;
    demand.unit = demand.resourceName == contracts::kNeuronCoreResource
                      ? topology::AllocationUnit::kCore
                      : topology::AllocationUnit::kDevice;
  }
  return demand;
}

}  // namespace

std::string jsonText(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<PodDemand> parsePodObject(const json& pod, const std::string& path) {
  return parsePod(&pod, path);
}

std::string instanceTypeOf(const json& node) {
  const auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) return "";
  const auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return "";
  for (const char* key : {contracts::kInstanceTypeLabel, contracts::kBetaInstanceTypeLabel}) {
    const auto label = labels->find(key);
    if (label != labels->end() && label->is_string()) return label->get<std::string>();
  }
  return "";
}

Result<ExtenderArgs> parseExtenderArgs(std::string_view body) {
  auto root = parseObject(body);
  if (!root) return std::move(root).error();
  ExtenderArgs args;
  auto pod = parsePod(field(*root, "Pod"), "Pod");
  if (!pod) return std::move(pod).error();
  args.pod = std::move(*pod);
  const json* names = field(*root, "NodeNames");
  const json* nodes = field(*root, "Nodes");
  if (names != nullptr && !names->is_null()) {
    if (!names->is_array()) return bad("NodeNames", "expected a list, got " + typeName(*names));
    for (std::size_t i = 0; i < names->size(); ++i) {
      if (!(*names)[i].is_string()) {
        return bad("NodeNames[" + std::to_string(i) + "]",
                   "expected a string, got " + typeName((*names)[i]));
      }
      args.nodeNames.push_back((*names)[i].get<std::string>());
    }
    return args;
  }
  if (nodes != nullptr && !nodes->is_null()) {
    const auto items = nodes->find("items");
    if (!nodes->is_object() || items == nodes->end() || !items->is_array()) {
      return bad("Nodes.items", "expected a NodeList with items");
    }
    args.fullNodes = true;
    for (std::size_t i = 0; i < items->size(); ++i) {
      const json& node = (*items)[i];
      const std::string path = "Nodes.items[" + std::to_string(i) + "]";
      if (!node.is_object()) return bad(path, "expected a Node, got " + typeName(node));
      const auto metadata = node.find("metadata");
      if (metadata == node.end() || !metadata->is_object())
        return bad(path + ".metadata", "missing");
      auto name = stringAt(*metadata, "name", path + ".metadata", true);
      if (!name) return std::move(name).error();
      args.nodeNames.push_back(*name);
      args.nodes.push_back({*name, instanceTypeOf(node)});
    }
    return args;
  }
  return bad("NodeNames", "missing (neither NodeNames nor Nodes was sent)");
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
    if (value == nullptr || value->is_null()) return bad(name, "missing");
    if (!value->is_string()) return bad(name, "expected a string, got " + typeName(*value));
    *target = value->get<std::string>();
    if (target->empty() && std::string_view(name) != "PodUID") return bad(name, "empty");
  }
  return args;
}

Result<PreemptionArgs> parsePreemptionArgs(std::string_view body) {
  auto root = parseObject(body);
  if (!root) return std::move(root).error();
  PreemptionArgs args;
  auto pod = parsePod(field(*root, "Pod"), "Pod");
  if (!pod) return std::move(pod).error();
  args.pod = std::move(*pod);
  const json* meta = field(*root, "NodeNameToMetaVictims");
  const json* full = field(*root, "NodeNameToVictims");
  const bool useMeta = meta != nullptr && !meta->is_null();
  const json* victims = useMeta ? meta : full;
  const std::string path = useMeta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
  if (victims == nullptr || victims->is_null()) return args;
  if (!victims->is_object()) return bad(path, "expected a map, got " + typeName(*victims));
  for (auto it = victims->begin(); it != victims->end(); ++it) {
    const std::string nodePath = path + "[\"" + it.key() + "\"]";
    const json* pods = field(it.value(), "Pods");
    if (pods == nullptr || !pods->is_array()) return bad(nodePath + ".Pods", "expected a list");
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
      if (uid == nullptr || !uid->is_string()) return bad(victimPath, "missing the pod's UID");
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
