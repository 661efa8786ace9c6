#include "common/contracts/topology_annotation.h"

#include <nlohmann/json.hpp>

#include "common/base/json_fields.h"
#include "common/base/strings.h"

namespace torus::contracts {
namespace {

using nlohmann::json;

constexpr int kMaxDevices = 64;
constexpr int kMaxCoresPerDevice = 16;

Error bad(const std::string& field, const std::string& why) {
  return makeError(ErrorCode::kInvalidArgument,
                   std::string("annotation torus.dev/topology: ") + field + ": " + why);
}

Result<int> intField(const json& root, const char* key, int low, int high) {
  auto value = required<int>(root, key, "");
  if (!value) return std::move(value).error().withContext("annotation torus.dev/topology");
  if (*value < low || *value > high) {
    return bad(key, "expected " + std::to_string(low) + ".." + std::to_string(high) + ", got " +
                        std::to_string(*value));
  }
  return *value;
}

Result<std::vector<int>> deviceList(const json& value, const std::string& field, int devices) {
  if (!value.is_array())
    return bad(field, std::string("expected a list, got ") + value.type_name());
  std::vector<int> result;
  for (const json& item : value) {
    if (!item.is_number_integer() || item.get<std::int64_t>() < 0 ||
        item.get<std::int64_t>() >= devices) {
      return bad(field, "expected device indices 0.." + std::to_string(devices - 1) + ", got " +
                            std::string(clipForMessage(item.dump())));
    }
    result.push_back(item.get<int>());
  }
  return result;
}

// A node of a type the catalog lacks, as its agent reports it: the devices and logical cores the
// driver showed, nothing the catalog would add (memory, a wiring to place shapes on).
Result<topology::Node> uncataloguedNode(const TopologySummary& summary) {
  if (summary.deviceCount < 1 || summary.coresPerDevice < 1) {
    return makeError(ErrorCode::kInvalidArgument,
                     "topology annotation: instance type \"" + summary.instanceType +
                         "\" is not in the catalog, and the annotation describes no devices "
                         "and cores to place on");
  }
  topology::Node node;
  node.instanceType = summary.instanceType;
  node.lnc = summary.lnc;
  node.physicalCoresPerDevice = summary.coresPerDevice * summary.lnc;
  node.devices.resize(static_cast<std::size_t>(summary.deviceCount));
  for (int index = 0; index < summary.deviceCount; ++index) {
    topology::Device& device = node.devices[static_cast<std::size_t>(index)];
    device.index = index;
    device.physicalCores = node.physicalCoresPerDevice;
  }
  return node;
}

}  // namespace

TopologySummary summarizeTopology(const topology::Node& node) {
  TopologySummary summary;
  summary.instanceType = node.instanceType;
  summary.lnc = node.lnc;
  summary.deviceCount = node.deviceCount();
  summary.coresPerDevice = node.logicalCoresPerDevice();
  for (const topology::Device& device : node.devices) {
    summary.links.push_back(device.connected);
  }
  summary.unhealthy = node.allDevices() - node.healthyDevices();
  summary.unknown = node.unknownHealthDevices();
  return summary;
}

std::string formatTopologyAnnotation(const TopologySummary& summary) {
  json unhealthy = json::array();
  summary.unhealthy.forEach([&](int device) { unhealthy.push_back(device); });
  json root = {{"v", 1},
               {"instanceType", summary.instanceType},
               {"lnc", summary.lnc},
               {"devices", summary.deviceCount},
               {"coresPerDevice", summary.coresPerDevice},
               {"unhealthy", unhealthy}};
  // Absent links mean "not known" to every reader; an empty list would not read back (found by
  // tests/fuzz).
  if (!summary.links.empty()) root["links"] = summary.links;
  // Only when there are some, so annotations of agents that never lose a source stay as they were.
  if (!summary.unknown.empty()) root["unknown"] = summary.unknown.ids();
  return root.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<TopologySummary> parseTopologyAnnotation(std::string_view text) {
  const json root = json::parse(text.begin(), text.end(), nullptr, false);
  if (root.is_discarded())
    return bad("value", "not valid JSON: " + quoteJsonString(clipForMessage(text)));
  if (!root.is_object())
    return bad("value", std::string("expected an object, got ") + root.type_name());
  auto version = intField(root, "v", 1, 1);
  if (!version) return std::move(version).error();
  TopologySummary summary;
  auto type = optional<std::string>(root, "instanceType", "");
  if (!type) return std::move(type).error().withContext("annotation torus.dev/topology");
  summary.instanceType = std::move(*type);
  auto lnc = intField(root, "lnc", 1, 8);
  auto devices = intField(root, "devices", 0, kMaxDevices);
  auto cores = intField(root, "coresPerDevice", 0, kMaxCoresPerDevice);
  for (auto* field : {&lnc, &devices, &cores}) {
    if (!*field) return std::move(*field).error();
  }
  summary.lnc = *lnc;
  summary.deviceCount = *devices;
  summary.coresPerDevice = *cores;
  if (const auto links = root.find("links"); links != root.end()) {
    if (!links->is_array() || static_cast<int>(links->size()) != summary.deviceCount) {
      return bad("links",
                 "expected one list per device (" + std::to_string(summary.deviceCount) + ")");
    }
    for (std::size_t i = 0; i < links->size(); ++i) {
      auto neighbours =
          deviceList((*links)[i], "links[" + std::to_string(i) + "]", summary.deviceCount);
      if (!neighbours) return std::move(neighbours).error();
      summary.links.push_back(std::move(*neighbours));
    }
  }
  if (const auto unhealthy = root.find("unhealthy"); unhealthy != root.end()) {
    auto list = deviceList(*unhealthy, "unhealthy", summary.deviceCount);
    if (!list) return std::move(list).error();
    summary.unhealthy = topology::DeviceSet::fromIds(*list);
  }
  if (const auto unknown = root.find("unknown"); unknown != root.end()) {
    auto list = deviceList(*unknown, "unknown", summary.deviceCount);
    if (!list) return std::move(list).error();
    summary.unknown = topology::DeviceSet::fromIds(*list) - summary.unhealthy;
  }
  return summary;
}

Result<topology::Node> nodeFromTopology(const TopologySummary& summary) {
  auto node = topology::findInstanceType(summary.instanceType) == nullptr
                  ? uncataloguedNode(summary)
                  : topology::catalogNode(summary.instanceType, summary.lnc);
  if (!node) return std::move(node).error().withContext("topology annotation");
  if (summary.deviceCount != 0 && summary.deviceCount != node->deviceCount()) {
    return makeError(ErrorCode::kInvalidArgument, "topology annotation: devices " +
                                                      std::to_string(summary.deviceCount) +
                                                      ", but " + summary.instanceType + " has " +
                                                      std::to_string(node->deviceCount()));
  }
  if (summary.links.size() == static_cast<std::size_t>(node->deviceCount())) {
    for (int device = 0; device < node->deviceCount(); ++device) {
      std::vector<int> peers;
      for (const int peer : summary.links[static_cast<std::size_t>(device)]) {
        if (peer < 0 || peer >= node->deviceCount() || peer == device) {
          return makeError(ErrorCode::kInvalidArgument, "topology annotation: links of device " +
                                                            std::to_string(device) +
                                                            " name device " + std::to_string(peer));
        }
        peers.push_back(peer);
      }
      node->devices[static_cast<std::size_t>(device)].connected = std::move(peers);
    }
  }
  summary.unhealthy.forEach([&](int device) {
    if (device < node->deviceCount()) {
      node->devices[static_cast<std::size_t>(device)].health = topology::reportedUnhealthy();
    }
  });
  summary.unknown.forEach([&](int device) {
    if (device < node->deviceCount()) {
      node->devices[static_cast<std::size_t>(device)].health.unmonitored = {
          "reported unmonitored by the node agent"};
    }
  });
  return node;
}

}  // namespace torus::contracts
