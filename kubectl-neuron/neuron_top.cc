#include "kubectl-neuron/neuron_top.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/base/text_table.h"
#include "common/contracts/agent_metrics.h"
#include "common/kube/object_fields.h"
#include "common/topology/node.h"

namespace torus::kubectl_neuron {
namespace {

namespace wire = contracts::agent_metrics;
using metrics::Sample;
using nlohmann::json;

constexpr const char* kHyperPodHealthLabel = "sagemaker.amazonaws.com/node-health-status";

struct PodUse {
  std::string nameSpace, pod, container, resource, node;
  topology::CoreSet cores;
  topology::DeviceSet devices;
  double memoryBytes = 0;
  double executions = 0;
  double errors = 0;
};

struct DeviceUse {
  int index = 0;
  bool healthy = true;
  std::string pods;
  double memoryBytes = 0;
  double eccUncorrected = 0;
};

struct NodeTop {
  std::string name;
  std::string error;
  std::string instanceType;
  int lnc = 0;
  int devices = 0;
  int cores = 0;
  int coresUsed = 0;
  int healthyDevices = 0;
  double eccUncorrected = 0;
  std::string deepCheck = "never run";
  std::vector<std::string> health;  // "NeuronHealthy=True", "NeuronHealth=NeuronHasNoError", ...
  std::vector<DeviceUse> deviceUse;
  std::vector<PodUse> pods;
};

// A core or device id from a label, -1 when it is not one (a garbled or foreign exposition).
int idOf(const std::string& text) {
  if (text.empty() || text.size() > 4) return -1;
  int id = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return -1;
    id = id * 10 + (c - '0');
  }
  return id < topology::CoreSet::kCapacity ? id : -1;
}

std::string bytes(double value) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

std::string count(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", value);
  return text;
}

std::string ago(std::chrono::system_clock::time_point now, double unixSeconds) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                           now - std::chrono::system_clock::time_point(
                                     std::chrono::seconds(static_cast<long long>(unixSeconds))))
                           .count();
  if (seconds < 120) return std::to_string(std::max<long long>(seconds, 0)) + "s ago";
  if (seconds < 7200) return std::to_string(seconds / 60) + "m ago";
  return std::to_string(seconds / 3600) + "h ago";
}

// The Node's health conditions and HyperPod's label, as short "name=value" words.
std::vector<std::string> healthOf(const json& nodes, const std::string& name) {
  std::vector<std::string> words;
  const json items = kube::fieldAt(nodes, {"items"});
  for (const json& node : items.is_array() ? items : json::array()) {
    if (kube::stringAt(node, {"metadata", "name"}) != name) continue;
    const json conditions = kube::fieldAt(node, {"status", "conditions"});
    for (const char* type : {"NeuronHealthy", "NeuronHealth", "AcceleratedHardwareReady"}) {
      for (const json& condition : conditions.is_array() ? conditions : json::array()) {
        if (kube::stringAt(condition, {"type"}) != type) continue;
        std::string word = std::string(type) + "=" + kube::stringAt(condition, {"status"});
        if (const std::string reason = kube::stringAt(condition, {"reason"}); !reason.empty()) {
          word += " (" + reason + ")";
        }
        words.push_back(word);
      }
    }
    if (const std::string hyperpod =
            kube::stringAt(node, {"metadata", "labels", kHyperPodHealthLabel});
        !hyperpod.empty()) {
      words.push_back(std::string(kHyperPodHealthLabel) + "=" + hyperpod);
    }
  }
  return words;
}

NodeTop summarize(const AgentScrape& scrape, const json& nodes,
                  std::chrono::system_clock::time_point now) {
  NodeTop top;
  top.name = scrape.node;
  top.health = healthOf(nodes, scrape.node);
  if (!scrape.error.empty()) {
    top.error = scrape.error;
    return top;
  }
  std::map<std::tuple<std::string, std::string, std::string, std::string>, PodUse> pods;
  std::map<int, std::set<std::string>> podsOfCore;
  std::map<int, double> coreMemory, coreExecutions, coreErrors;
  std::map<int, DeviceUse> devices;
  double lastRun = 0, failures = -1;
  for (const Sample& sample : scrape.samples) {
    const int core = idOf(sample.label(wire::kCoreLabel));
    const int device = idOf(sample.label(wire::kDeviceIndexLabel));
    if (sample.name == wire::kHardwareInfo) {
      top.instanceType = sample.label(wire::kInstanceTypeLabel);
      top.lnc = std::max(0, idOf(sample.label(wire::kLncLabel)));
      top.devices = std::max(0, idOf(sample.label(wire::kDeviceCountLabel)));
      top.cores = top.devices * std::max(0, idOf(sample.label(wire::kCoresPerDeviceLabel)));
    } else if (sample.name == wire::kAllocationInfo && core >= 0) {
      PodUse& use = pods[{sample.label(wire::kNamespaceLabel), sample.label(wire::kPodLabel),
                          sample.label(wire::kContainerLabel), sample.label(wire::kResourceLabel)}];
      use.nameSpace = sample.label(wire::kNamespaceLabel);
      use.pod = sample.label(wire::kPodLabel);
      use.container = sample.label(wire::kContainerLabel);
      use.resource = sample.label(wire::kResourceLabel);
      use.node = scrape.node;
      use.cores.insert(core);
      if (device >= 0) use.devices.insert(device);
      podsOfCore[core].insert(use.nameSpace + "/" + use.pod);
    } else if (sample.name.rfind(wire::kCoreMemoryUsagePrefix, 0) == 0 && core >= 0) {
      coreMemory[core] += sample.value;
      if (device >= 0) devices[device].memoryBytes += sample.value;
    } else if (sample.name == wire::kExecutionStatus && core >= 0 &&
               sample.label(wire::kStatusTypeLabel) == wire::kStatusCompleted) {
      coreExecutions[core] += sample.value;
    } else if (sample.name == wire::kExecutionErrors && core >= 0) {
      coreErrors[core] += sample.value;
    } else if (sample.name == wire::kDeviceHealthy && device >= 0) {
      devices[device].index = device;
      devices[device].healthy = sample.value == 1;
      devices[device].pods = sample.label(wire::kPodLabel);
    } else if (sample.name == wire::kEccEvents && device >= 0 &&
               sample.label(wire::kEventTypeLabel).find(wire::kUncorrectedEventWord) !=
                   std::string::npos) {
      devices[device].eccUncorrected += sample.value;
      top.eccUncorrected += sample.value;
    } else if (sample.name == wire::kDeepCheckLastRun) {
      lastRun = sample.value;
    } else if (sample.name == wire::kDeepCheckFailures) {
      failures = sample.value;
    }
  }
  if (lastRun > 0) {
    top.deepCheck = std::string(failures == 0 ? "passed " : "FAILED ") + ago(now, lastRun);
  }
  top.coresUsed = static_cast<int>(podsOfCore.size());
  for (auto& [key, use] : pods) {
    for (const int core : use.cores.ids()) {
      use.memoryBytes += coreMemory[core];
      use.executions += coreExecutions[core];
      use.errors += coreErrors[core];
    }
    top.pods.push_back(use);
  }
  for (auto& [index, use] : devices) {
    use.index = index;
    if (use.healthy) ++top.healthyDevices;
    top.deviceUse.push_back(use);
  }
  return top;
}

json toJson(const NodeTop& top) {
  json node = {{"node", top.name}, {"health", top.health}};
  if (!top.error.empty()) {
    node["error"] = top.error;
    return node;
  }
  node.update({{"instanceType", top.instanceType},
               {"lnc", top.lnc},
               {"cores", top.cores},
               {"coresUsed", top.coresUsed},
               {"deviceCount", top.devices},
               {"healthyDevices", top.healthyDevices},
               {"eccUncorrected", top.eccUncorrected},
               {"deepCheck", top.deepCheck}});
  json pods = json::array();
  for (const PodUse& use : top.pods) {
    pods.push_back({{"namespace", use.nameSpace},
                    {"pod", use.pod},
                    {"container", use.container},
                    {"resource", use.resource},
                    {"cores", use.cores.ids()},
                    {"devices", use.devices.ids()},
                    {"memoryBytes", use.memoryBytes},
                    {"executions", use.executions},
                    {"errors", use.errors}});
  }
  node["pods"] = std::move(pods);
  // "devices" holds a row per device that has per-device metrics; "deviceCount" is the hardware's
  // count from the agent's hardware info, so a device with no metrics of its own is still counted.
  json devices = json::array();
  for (const DeviceUse& use : top.deviceUse) {
    devices.push_back({{"device", use.index},
                       {"healthy", use.healthy},
                       {"pods", use.pods},
                       {"memoryBytes", use.memoryBytes},
                       {"eccUncorrected", use.eccUncorrected}});
  }
  node["devices"] = std::move(devices);
  return node;
}

}  // namespace

std::string renderTop(const std::vector<AgentScrape>& scrapes, const json& nodes,
                      const TopOptions& options) {
  std::vector<NodeTop> tops;
  for (const AgentScrape& scrape : scrapes) {
    if (!options.node.empty() && scrape.node != options.node) continue;
    tops.push_back(summarize(scrape, nodes, options.now));
  }
  std::sort(tops.begin(), tops.end(),
            [](const NodeTop& a, const NodeTop& b) { return a.name < b.name; });
  if (options.json) {
    json out = json::array();
    for (const NodeTop& top : tops)
      out.push_back(toJson(top));
    return json{{"nodes", std::move(out)}}.dump(2) + "\n";
  }
  if (tops.empty()) {
    return options.node.empty() ? "no Neuron node agent is running\n"
                                : "no Neuron node agent runs on " + options.node + "\n";
  }
  TextTable nodeTable({"NODE", "TYPE", "LNC", "CORES\nUSED", "DEVICES\nHEALTHY", "ECC\nUNCORR.",
                       "DEEP CHECK", "HEALTH"});
  std::vector<PodUse> pods;
  for (const NodeTop& top : tops) {
    if (!top.error.empty()) {
      nodeTable.addRow(
          {top.name, "-", "-", "-", "-", "-", "-", "metrics unreadable: " + top.error});
      continue;
    }
    nodeTable.addRow({top.name, top.instanceType, std::to_string(top.lnc),
                      std::to_string(top.coresUsed) + "/" + std::to_string(top.cores),
                      std::to_string(top.healthyDevices) + "/" + std::to_string(top.devices),
                      count(top.eccUncorrected), top.deepCheck, joinStrings(top.health, ", ")});
    pods.insert(pods.end(), top.pods.begin(), top.pods.end());
  }
  std::string out = nodeTable.render();
  if (pods.empty()) {
    out += "\nno pod holds a NeuronCore\n";
  } else {
    std::sort(pods.begin(), pods.end(), [](const PodUse& a, const PodUse& b) {
      return std::tie(a.node, a.nameSpace, a.pod, a.container) <
             std::tie(b.node, b.nameSpace, b.pod, b.container);
    });
    TextTable podTable({"NAMESPACE", "POD", "CONTAINER", "NODE", "RESOURCE", "CORES", "DEVICES",
                        "DEVICE\nMEMORY", "EXECUTIONS", "ERRORS"});
    for (const PodUse& use : pods) {
      podTable.addRow({use.nameSpace, use.pod, use.container, use.node, use.resource,
                       use.cores.toRangeString(), use.devices.toRangeString(),
                       bytes(use.memoryBytes), count(use.executions), count(use.errors)});
    }
    out += "\n" + podTable.render();
  }
  if (!options.node.empty() && tops.size() == 1 && tops[0].error.empty()) {
    TextTable deviceTable({"DEVICE", "HEALTH", "POD", "DEVICE\nMEMORY", "ECC\nUNCORR."});
    for (const DeviceUse& use : tops[0].deviceUse) {
      deviceTable.addRow(
          {"neuron" + std::to_string(use.index), use.healthy ? "healthy" : "OUT OF SERVICE",
           use.pods.empty() ? "-" : use.pods, bytes(use.memoryBytes), count(use.eccUncorrected)});
    }
    out += "\n" + deviceTable.render();
  }
  return out;
}

}  // namespace torus::kubectl_neuron
