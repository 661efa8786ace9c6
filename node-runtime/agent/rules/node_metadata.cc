#include "node-runtime/agent/rules/node_metadata.h"

#include "common/contracts/neuron_names.h"
#include "common/contracts/topology_annotation.h"
#include "common/contracts/ultraserver_labels.h"

namespace torus::agent {
namespace {

using contracts::kTorusPrefix;
using contracts::kUltraServerLabelPrefix;

bool startsWith(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

NodeMetadata nodeMetadata(const topology::Node& node, std::optional<int> pendingLnc) {
  NodeMetadata metadata;
  const topology::DeviceSet healthy = node.healthyDevices();
  metadata.labels[contracts::kLncLabel] = std::to_string(node.lnc);
  if (!node.instanceType.empty())
    metadata.labels[contracts::kTorusInstanceTypeLabel] = node.instanceType;
  metadata.labels[contracts::kDeviceCountLabel] = std::to_string(node.deviceCount());
  metadata.labels[contracts::kHealthyDevicesLabel] = std::to_string(healthy.size());
  if (node.ultraServer) metadata.labels.merge(contracts::labelsOf(*node.ultraServer));
  metadata.annotations[contracts::kTopologyAnnotation] =
      contracts::formatTopologyAnnotation(contracts::summarizeTopology(node));
  const topology::DeviceSet unhealthy = node.allDevices() - healthy;
  if (node.deviceCount() == 0) {
    metadata.healthy = false;
    metadata.reason = "NoNeuronDevices";
    metadata.message = "the driver reports no Neuron devices";
  } else if (!unhealthy.empty()) {
    metadata.healthy = false;
    metadata.reason = "UnhealthyDevices";
    metadata.message = "out of service:";
    unhealthy.forEach([&](int device) {
      metadata.message += " neuron" + std::to_string(device) + " (" +
                          node.devices[static_cast<std::size_t>(device)].health.reason + ")";
    });
  } else {
    metadata.reason = "AllDevicesHealthy";
    metadata.message = std::to_string(node.deviceCount()) + " devices healthy";
  }
  if (pendingLnc) {
    if (metadata.healthy) metadata.reason = "LNCChangePending";
    metadata.message += "; logical_nc_config asks for LNC " + std::to_string(*pendingLnc) +
                        ", which renumbers every core: LNC " + std::to_string(node.lnc) +
                        " stays in force until no pod holds a core";
  }
  return metadata;
}

bool ownedLabel(const std::string& key) {
  // The operator's: device plugin or DRA, core partitions or not, and which nodes are Neuron
  // nodes (the agent's own placement: dropping it could take the agent off its node).
  if (key == contracts::kNeuronModeLabel || key == contracts::kCoreDevicesLabel ||
      key == contracts::kNeuronNodeLabel)
    return false;
  return startsWith(key, kTorusPrefix) || startsWith(key, kUltraServerLabelPrefix);
}

bool ownedAnnotation(const std::string& key) {
  return startsWith(key, kTorusPrefix);
}

}  // namespace torus::agent
