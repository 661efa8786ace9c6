#include "kubectl-neuron/kubectl_neuron_render.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "common/base/text_table.h"
#include "common/topology/fragmentation.h"
#include "common/topology/link_drawing.h"

namespace torus::kubectl_neuron {
namespace {

using nlohmann::json;

struct NodeSummary {
  std::string name;
  extender::NodeState state;
  topology::CoreSet usedCores;
  int freeDevices = 0;
  int largestFreeDevices = 0;  // the largest allowed device set that is entirely free
  int largestFreeCoreRun = 0;  // else the longest free run of cores inside used devices
  topology::DeviceSet unhealthy;
  topology::DeviceSet unknown;  // in service, but the agent cannot watch their health
  std::vector<extender::Allocation> allocations;
};

NodeSummary summarize(const ClusterSnapshot& snapshot, const std::string& name) {
  NodeSummary summary;
  summary.name = name;
  summary.state = *snapshot.state.node(name);
  const topology::Node& model = summary.state.model;
  summary.allocations = snapshot.state.allocationsOn(name);
  std::sort(summary.allocations.begin(), summary.allocations.end(),
            [](const extender::Allocation& a, const extender::Allocation& b) {
              return a.cores.ids() < b.cores.ids();
            });
  for (const extender::Allocation& allocation : summary.allocations)
    summary.usedCores |= allocation.cores;
  summary.freeDevices = extender::freeIds(summary.state, topology::AllocationUnit::kDevice).size();
  summary.unhealthy = model.allDevices() - model.healthyDevices();
  summary.unknown = model.unknownHealthDevices();
  const topology::ShapeCatalog catalog(topology::shapeRulesOf(model));
  const topology::FreeShapes free = topology::freeShapes(model, catalog, summary.state.freeCores);
  for (std::size_t i = 0; i < free.countsLargestFirst.size(); ++i) {
    if (free.countsLargestFirst[i] > 0) {
      summary.largestFreeDevices = catalog.sizesLargestFirst()[i];
      break;
    }
  }
  summary.largestFreeCoreRun = free.freeCoreRun;
  return summary;
}

std::vector<NodeSummary> summarizeAll(const ClusterSnapshot& snapshot) {
  std::vector<std::string> names = snapshot.state.nodeNames();
  std::sort(names.begin(), names.end());
  std::vector<NodeSummary> summaries;
  for (const std::string& name : names) {
    if (snapshot.state.node(name)) summaries.push_back(summarize(snapshot, name));
  }
  return summaries;
}

std::string largestFreeText(const NodeSummary& node) {
  if (node.largestFreeDevices > 0) {
    return std::to_string(node.largestFreeDevices) +
           (node.largestFreeDevices == 1 ? " device" : " devices");
  }
  if (node.largestFreeCoreRun > 0) {
    return std::to_string(node.largestFreeCoreRun) +
           (node.largestFreeCoreRun == 1 ? " core" : " cores");
  }
  return "-";
}

std::string unitName(const extender::Allocation& allocation) {
  return allocation.unit == topology::AllocationUnit::kCore ? "cores" : "devices";
}

json nodeJson(const NodeSummary& node) {
  const topology::Node& model = node.state.model;
  json allocations = json::array();
  for (const extender::Allocation& allocation : node.allocations) {
    allocations.push_back(
        {{"pod", allocation.podKey},
         {"unit", allocation.unit == topology::AllocationUnit::kCore ? "core" : "device"},
         {"ids", allocation.ids.ids()},
         {"cores", allocation.cores.ids()}});
  }
  return {{"name", node.name},
          {"instanceType", model.instanceType},
          {"lnc", model.lnc},
          {"cores",
           {{"total", model.logicalCoreCount()},
            {"used", node.usedCores.size()},
            {"free", node.state.freeCores.size()}}},
          {"devices",
           {{"total", model.deviceCount()},
            {"free", node.freeDevices},
            {"unhealthy", node.unhealthy.ids()},
            {"unknown", node.unknown.ids()}}},
          {"largestFreeDevices", node.largestFreeDevices},
          {"largestFreeCoreRun", node.largestFreeCoreRun},
          {"allocations", std::move(allocations)}};
}

// Each holder gets a letter in core order; a device shared by several holders shows '+'.
char holderMark(const NodeSummary& node, int device) {
  const topology::CoreSet cores = node.state.model.coresOfDevice(device);
  char mark = 0;
  for (std::size_t i = 0; i < node.allocations.size(); ++i) {
    if (!node.allocations[i].cores.intersects(cores)) continue;
    const char letter = i < 26 ? static_cast<char>('a' + i) : '*';
    if (mark != 0 && mark != letter) return '+';
    mark = letter;
  }
  if (mark != 0) return mark;
  if (node.unhealthy.contains(device)) return '!';
  return node.unknown.contains(device) ? '?' : ' ';
}

std::string healthText(const NodeSummary& node) {
  std::string text;
  if (!node.unhealthy.empty()) text = "unhealthy " + node.unhealthy.toRangeString();
  if (!node.unknown.empty())
    text += (text.empty() ? "" : ", ") + std::string("unknown ") + node.unknown.toRangeString();
  return text.empty() ? "ok" : text;
}

}  // namespace

std::string renderNodes(const ClusterSnapshot& snapshot, bool asJson) {
  const std::vector<NodeSummary> nodes = summarizeAll(snapshot);
  if (asJson) {
    json out = json::array();
    for (const NodeSummary& node : nodes)
      out.push_back(nodeJson(node));
    return out.dump(2) + "\n";
  }
  if (nodes.empty()) return "No Neuron nodes found.\n";
  TextTable table({"NODE", "INSTANCE TYPE", "LNC", "CORES\nUSED", "DEVICES\nFREE", "LARGEST FREE",
                   "PODS", "HEALTH"});
  for (const NodeSummary& node : nodes) {
    const topology::Node& model = node.state.model;
    table.addRow(
        {node.name, model.instanceType, std::to_string(model.lnc),
         std::to_string(node.usedCores.size()) + "/" + std::to_string(model.logicalCoreCount()),
         std::to_string(node.freeDevices) + "/" + std::to_string(model.deviceCount()),
         largestFreeText(node), std::to_string(node.allocations.size()), healthText(node)});
  }
  return table.render();
}

Result<std::string> renderNode(const ClusterSnapshot& snapshot, const std::string& name,
                               bool asJson) {
  if (!snapshot.state.node(name)) {
    return makeError(ErrorCode::kNotFound,
                     "node " + name +
                         " is not a Neuron node (its instance type is not in Torus's catalog "
                         "and no node agent reports its devices)");
  }
  const NodeSummary node = summarize(snapshot, name);
  if (asJson) return nodeJson(node).dump(2) + "\n";
  const topology::Node& model = node.state.model;
  std::string out = name + " (" + model.instanceType + ", LNC " + std::to_string(model.lnc) + ", " +
                    std::to_string(model.logicalCoresPerDevice()) + " cores per device)\n";
  out += topology::drawNeuronLinks(model, [&](const topology::Device& device) {
    char text[16];
    std::snprintf(text, sizeof text, "[%2d%c]", device.index, holderMark(node, device.index));
    return std::string(text);
  });
  out += "\n";
  if (node.allocations.empty()) {
    out += "No pods hold Neuron resources on this node.\n";
  } else {
    TextTable table({"MARK", "POD", "HOLDS", "CORES"});
    for (std::size_t i = 0; i < node.allocations.size(); ++i) {
      const extender::Allocation& allocation = node.allocations[i];
      table.addRow({std::string(1, i < 26 ? static_cast<char>('a' + i) : '*'), allocation.podKey,
                    unitName(allocation) + " " + allocation.ids.toRangeString(),
                    allocation.cores.toRangeString()});
    }
    out += table.render();
  }
  out += "Free: " + std::to_string(node.state.freeCores.size()) + " cores (" +
         (node.state.freeCores.empty() ? "none" : node.state.freeCores.toRangeString()) +
         "), largest free shape " + largestFreeText(node) + ".";
  if (!node.unhealthy.empty())
    out += " Unhealthy devices (!): " + node.unhealthy.toRangeString() + ".";
  if (!node.unknown.empty()) {
    out += " Devices whose health is unknown (?; in service, not monitored): " +
           node.unknown.toRangeString() + ".";
  }
  return out + "\n";
}

std::string renderPods(const ClusterSnapshot& snapshot, const std::string& namespace_,
                       bool asJson) {
  std::vector<const extender::PodRecord*> pods;
  for (const extender::PodRecord& pod : snapshot.neuronPods) {
    if (namespace_.empty() || pod.demand.namespace_ == namespace_) pods.push_back(&pod);
  }
  std::sort(pods.begin(), pods.end(),
            [](const extender::PodRecord* a, const extender::PodRecord* b) {
              return a->demand.key() < b->demand.key();
            });
  const auto allocatedText = [](const extender::PodRecord& pod) {
    return pod.allocatedFlag.empty() ? std::string("-") : pod.allocatedFlag;
  };
  if (asJson) {
    json out = json::array();
    for (const extender::PodRecord* pod : pods) {
      const auto held = snapshot.state.allocationOf(pod->demand.uid);
      out.push_back({{"namespace", pod->demand.namespace_},
                     {"name", pod->demand.name},
                     {"node", pod->nodeName},
                     {"phase", pod->phase},
                     {"resource", pod->demand.resourceName},
                     {"count", pod->demand.count},
                     {"ids", pod->assignedIds ? json(pod->assignedIds->ids()) : json(nullptr)},
                     {"cores", held ? json(held->cores.ids()) : json(nullptr)},
                     {"allocated", allocatedText(*pod)}});
    }
    return out.dump(2) + "\n";
  }
  if (pods.empty()) return "No pods ask for Neuron resources.\n";
  TextTable table({"NAMESPACE", "POD", "NODE", "PHASE", "REQUEST", "IDS", "CORES", "ALLOCATED"});
  for (const extender::PodRecord* pod : pods) {
    const auto held = snapshot.state.allocationOf(pod->demand.uid);
    std::string request = std::to_string(pod->demand.count) + " " + pod->demand.resourceName;
    table.addRow({pod->demand.namespace_, pod->demand.name,
                  pod->nodeName.empty() ? "-" : pod->nodeName,
                  pod->phase.empty() ? "-" : pod->phase, request,
                  pod->assignedIds ? pod->assignedIds->toRangeString() : "-",
                  held ? held->cores.toRangeString() : "-", allocatedText(*pod)});
  }
  return table.render();
}

}  // namespace torus::kubectl_neuron
