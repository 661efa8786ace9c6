#include "node-runtime/cli/neuron_ls/neuron_ls_render.h"

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/base/text_table.h"
#include "common/topology/neuronlink_graph.h"

namespace torus::cli {
namespace {

using topology::Device;
using topology::Node;

std::string memoryText(std::uint64_t bytes) {
  if (bytes == 0) return "-";
  constexpr std::uint64_t kGiB = 1024ULL * 1024 * 1024;
  return std::to_string(bytes / kGiB) + " GiB";
}

std::string connectedText(const Device& device) {
  std::vector<std::string> items;
  for (const int neighbour : device.connected)
    items.push_back(std::to_string(neighbour));
  return items.empty() ? "-" : joinStrings(items, ", ");
}

std::string cell(const Device& device) {
  char text[8];
  std::snprintf(text, sizeof(text), device.health.healthy ? "[%2d]" : "[!%d]", device.index);
  return text;
}

// A row-major 4x4 torus: links inside the grid as --- and |, wrap links as ~ at row ends and
// : above/below the columns, so a cut link shows as a gap exactly where it is.
std::string drawTorus(const Node& node, const topology::NeuronLinkGraph& graph) {
  const int width = node.torusWidth;
  const int rows = node.deviceCount() / width;
  std::string out;
  const auto columnWrapLine = [&] {
    std::string line = "   ";
    for (int x = 0; x < width; ++x) {
      line += graph.linked(x, (rows - 1) * width + x) ? "  :    " : "       ";
    }
    return line + "\n";
  };
  out += columnWrapLine();
  for (int y = 0; y < rows; ++y) {
    const int first = y * width;
    const int last = first + width - 1;
    const bool rowWraps = graph.linked(first, last);
    std::string line = rowWraps ? " ~ " : "   ";
    for (int x = 0; x < width; ++x) {
      const int device = first + x;
      line += cell(node.devices[static_cast<std::size_t>(device)]);
      if (x + 1 < width) line += graph.linked(device, device + 1) ? "---" : "   ";
    }
    out += line + (rowWraps ? " ~\n" : "\n");
    if (y + 1 < rows) {
      std::string vertical = "   ";
      for (int x = 0; x < width; ++x) {
        vertical += graph.linked(first + x, first + x + width) ? "  |    " : "       ";
      }
      out += vertical + "\n";
    }
  }
  out += columnWrapLine();
  return out;
}

std::string drawLine(const Node& node, const topology::NeuronLinkGraph& graph, bool ring) {
  std::string out = "   ";
  for (int device = 0; device < node.deviceCount(); ++device) {
    out += cell(node.devices[static_cast<std::size_t>(device)]);
    if (device + 1 < node.deviceCount()) out += graph.linked(device, device + 1) ? "---" : "   ";
  }
  out += "\n";
  const int last = node.deviceCount() - 1;
  if (ring && last > 1) {
    out += graph.linked(0, last) ? "   (neuron" + std::to_string(last) + " links back to neuron0)\n"
                                 : "   (ring link " + std::to_string(last) + "-0 is missing)\n";
  }
  return out;
}

}  // namespace

std::string renderDeviceTable(const discovery::Discovery& discovery) {
  const Node& node = discovery.node;
  std::string out = "instance-type: " + node.instanceType + "\n";
  out += "logical-neuroncore-config: " + std::to_string(node.lnc) + "\n";
  out += "neuron-devices: " + std::to_string(node.deviceCount()) +
         "  neuron-cores: " + std::to_string(node.logicalCoreCount()) + "\n";
  TextTable table({"NEURON\nDEVICE", "NEURON\nCORES", "NEURON\nCORE IDS", "NEURON\nMEMORY",
                   "CONNECTED\nDEVICES", "PCI\nBDF", "NUMA\nNODE", "HEALTH"});
  for (const Device& device : node.devices) {
    const topology::CoreSet cores = node.coresOfDevice(device.index);
    table.addRow({std::to_string(device.index), std::to_string(node.logicalCoresPerDevice()),
                  cores.empty() ? "-" : cores.toRangeString(), memoryText(device.memoryBytes),
                  connectedText(device), device.pciBdf.empty() ? "-" : device.pciBdf,
                  device.numaNode ? std::to_string(*device.numaNode) : "-",
                  device.health.healthy ? "ok" : "UNHEALTHY"});
  }
  out += table.render();
  for (const Device& device : node.devices) {
    if (!device.health.healthy) {
      out += "neuron" + std::to_string(device.index) + " unhealthy: " + device.health.reason + "\n";
    }
  }
  for (const std::string& finding : discovery.findings)
    out += "warning: " + finding + "\n";
  return out;
}

std::string renderDeviceJson(const discovery::Discovery& discovery) {
  const Node& node = discovery.node;
  nlohmann::json devices = nlohmann::json::array();
  for (const Device& device : node.devices) {
    nlohmann::json entry;
    entry["neuron_device"] = device.index;
    entry["bdf"] = device.pciBdf;
    entry["connected_to"] = device.connected;
    entry["nc_count"] = node.logicalCoresPerDevice();
    entry["logical_neuroncore_config"] = node.lnc;
    entry["memory_size"] = device.memoryBytes;
    entry["neuroncore_ids"] = node.coresOfDevice(device.index).ids();
    entry["numa_node"] = device.numaNode ? nlohmann::json(*device.numaNode) : nlohmann::json(-1);
    // Ours, beyond AWS's keys:
    entry["instance_type"] = node.instanceType;
    entry["healthy"] = device.health.healthy;
    if (!device.health.healthy) entry["health_reason"] = device.health.reason;
    if (!device.serialNumber.empty()) entry["serial_number"] = device.serialNumber;
    devices.push_back(std::move(entry));
  }
  return devices.dump(2) + "\n";
}

std::string renderTopology(const discovery::Discovery& discovery) {
  const Node& node = discovery.node;
  const auto graph = topology::NeuronLinkGraph::fromNode(node);
  std::string out = node.instanceType + ": ";
  switch (node.interconnect) {
    case topology::Interconnect::kTorus2d:
      if (node.torusWidth > 0 && node.deviceCount() % node.torusWidth == 0) {
        out += "NeuronLink 2D torus " + std::to_string(node.torusWidth) + "x" +
               std::to_string(node.deviceCount() / node.torusWidth) +
               " (~ row wraps, : column wraps)\n\n";
        out += drawTorus(node, graph);
        break;
      }
      [[fallthrough]];
    case topology::Interconnect::kRing:
      out += "NeuronLink ring of " + std::to_string(node.deviceCount()) + "\n\n";
      out += drawLine(node, graph, true);
      break;
    case topology::Interconnect::kChain:
      out += "NeuronLink chain of " + std::to_string(node.deviceCount()) + " (no wrap)\n\n";
      out += drawLine(node, graph, false);
      break;
    case topology::Interconnect::kNone:
      out += "a single device, no NeuronLink\n\n";
      out += drawLine(node, graph, false);
      break;
  }
  out += "\n[!N] = unhealthy device\n";
  return out;
}

}  // namespace torus::cli
