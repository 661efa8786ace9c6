#include "node-runtime/cli/neuron_ls/neuron_ls_render.h"

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/base/text_table.h"
#include "common/topology/link_drawing.h"

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

// "ok", "UNHEALTHY" or "unknown" (in service, a source of its health lost).
std::string healthText(const topology::DeviceHealth& health) {
  switch (health.state()) {
    case topology::HealthState::kHealthy:
      return "ok";
    case topology::HealthState::kUnhealthy:
      return "UNHEALTHY";
    case topology::HealthState::kUnknown:
      return "unknown";
  }
  return "unknown";
}

// "0000:cc:00.0" -> "cc:00.0"; "" stays "".
std::string busSlotFunction(const std::string& bdf) {
  const std::size_t colon = bdf.find(':');
  return colon == std::string::npos || bdf.size() != 12 ? bdf : bdf.substr(colon + 1);
}

}  // namespace

std::string renderDeviceTable(const discovery::Discovery& discovery) {
  const Node& node = discovery.node;
  std::string out = "instance-type: " + node.instanceType + "\n";
  out += "logical-neuroncore-config: " + std::to_string(node.lnc) + "\n";
  out += "neuron-devices: " + std::to_string(node.deviceCount()) +
         "  neuron-cores: " + std::to_string(node.logicalCoreCount()) + "\n";
  TextTable table({"NEURON\nDEVICE", "NEURON\nCORES", "NEURON\nCORE IDS", "NEURON\nMEMORY",
                   "CONNECTED\nDEVICES", "PCI\nBDF", "CPU\nAFFINITY", "NUMA\nNODE", "HEALTH"});
  for (const Device& device : node.devices) {
    const topology::CoreSet cores = node.coresOfDevice(device.index);
    table.addRow({std::to_string(device.index), std::to_string(node.logicalCoresPerDevice()),
                  cores.empty() ? "-" : cores.toRangeString(), memoryText(device.memoryBytes),
                  connectedText(device), device.pciBdf.empty() ? "-" : device.pciBdf,
                  device.cpuAffinity.empty() ? "-" : device.cpuAffinity,
                  device.numaNode ? std::to_string(*device.numaNode) : "-",
                  healthText(device.health)});
  }
  out += table.render();
  for (const Device& device : node.devices) {
    if (!device.health.healthy) {
      out += "neuron" + std::to_string(device.index) + " unhealthy: " + device.health.reason + "\n";
    }
    if (!device.health.unmonitored.empty()) {
      out += "neuron" + std::to_string(device.index) +
             " not monitored: " + joinStrings(device.health.unmonitored, "; ") + "\n";
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
    // AWS's neuron-ls -j formats: bdf without the PCI domain, numa_node and cpu_affinity as
    // strings (its published trn2n.48xlarge output).
    entry["bdf"] = busSlotFunction(device.pciBdf);
    entry["cpu_affinity"] = device.cpuAffinity;
    entry["connected_to"] = device.connected;
    entry["nc_count"] = node.logicalCoresPerDevice();
    entry["logical_neuroncore_config"] = node.lnc;
    entry["memory_size"] = device.memoryBytes;
    entry["neuroncore_ids"] = node.coresOfDevice(device.index).ids();
    entry["numa_node"] = std::to_string(device.numaNode.value_or(-1));
    // Ours, beyond AWS's keys:
    if (!device.pciBdf.empty()) entry["pci_bus_id"] = device.pciBdf;
    entry["instance_type"] = node.instanceType;
    entry["healthy"] = device.health.healthy;
    entry["health_state"] = std::string(topology::stateName(device.health.state()));
    if (!device.health.healthy) entry["health_reason"] = device.health.reason;
    if (!device.health.unmonitored.empty()) entry["unmonitored"] = device.health.unmonitored;
    if (!device.pcieRoot.empty()) entry["pcie_root"] = device.pcieRoot;
    if (!device.serialNumber.empty()) entry["serial_number"] = device.serialNumber;
    devices.push_back(std::move(entry));
  }
  return devices.dump(2) + "\n";
}

std::string renderTopology(const discovery::Discovery& discovery) {
  const Node& node = discovery.node;
  return node.instanceType + ": " + topology::drawNeuronLinks(node, topology::healthCell) +
         "\n[!N] = unhealthy device\n";
}

}  // namespace torus::cli
