#include "dra-driver/device_attributes.h"

#include <vector>

#include "common/base/stable_hash.h"
#include "common/base/version.h"
#include "common/contracts/neuron_names.h"
#include "common/topology/allowed_shapes.h"
#include "common/topology/neuronlink_graph.h"

namespace torus::dra {
namespace {

using nlohmann::json;

std::string labelOr(const std::map<std::string, std::string>& labels, const std::string& key) {
  const auto found = labels.find(key);
  return found == labels.end() ? std::string() : found->second;
}

// The driver's "2.24.7.0" as semantic version "2.24.7" (a version attribute must be semver);
// "" when it is not made of numbers.
std::string semverOf(const std::string& version) {
  std::vector<std::string> parts;
  std::string part;
  for (const char c : version + ".") {
    if (c == '.') {
      if (part.empty() || (part.size() > 1 && part[0] == '0')) return "";
      parts.push_back(part);
      part.clear();
    } else if (c >= '0' && c <= '9' && part.size() < 9) {
      part += c;
    } else {
      return "";
    }
  }
  while (parts.size() < 3)
    parts.push_back("0");
  return parts[0] + "." + parts[1] + "." + parts[2];
}

}  // namespace

json intAttribute(std::int64_t value) {
  return {{"int", value}};
}
json stringAttribute(const std::string& value) {
  return {{"string", value}};
}
json versionAttribute(const std::string& value) {
  return {{"version", value}};
}

json chipAttributes(const std::string& nodeName, const topology::Node& node,
                    const std::map<std::string, std::string>& nodeLabels, int device) {
  json attributes = {
      {"deviceId", intAttribute(device)},
      {"instanceType", stringAttribute(node.instanceType)},
      {"draDriverVersion", versionAttribute(driverSemver())},
      {"logicalNeuronCoreConfig", intAttribute(node.lnc)},
  };
  if (const std::string version = semverOf(node.driverVersion); !version.empty()) {
    attributes["neuronDriverVersion"] = versionAttribute(version);
  }
  if (node.interconnect == topology::Interconnect::kTorus2d && node.torusWidth > 0 &&
      !node.ultraServer) {
    const int row = device / node.torusWidth;
    attributes["topology_x"] = intAttribute(row);
    attributes["topology_y"] = intAttribute(device % node.torusWidth);
    attributes["topology4_id"] = intAttribute(row);
    attributes["topology8_id"] = intAttribute(row / 2);
  }
  for (const int size : {1, 4, 8, 16}) {
    const std::string id = deviceGroupId(nodeName, node, device, size);
    if (!id.empty()) {
      attributes["resource.aws.com/devicegroup" + std::to_string(size) + "_id"] =
          stringAttribute(id);
    }
  }
  for (int layer = 1; layer <= 3; ++layer) {
    const std::string value =
        labelOr(nodeLabels, contracts::kNetworkLayerLabelPrefix + std::to_string(layer));
    if (!value.empty()) {
      attributes["networkNodeLayer" + std::to_string(layer)] = stringAttribute(value);
    }
  }
  const topology::Device& facts = node.devices[static_cast<std::size_t>(device)];
  if (facts.numaNode) {
    attributes["resource.kubernetes.io/numaNode"] = intAttribute(*facts.numaNode);
  }
  if (!facts.pciBdf.empty()) {
    attributes["resource.kubernetes.io/pciBusID"] = stringAttribute(facts.pciBdf);
  }
  // Kubernetes' standard attribute (1.37): a claim asks for a chip and the network card under
  // the same root with matchAttribute, whatever driver publishes the card.
  if (!facts.pcieRoot.empty()) {
    attributes["resource.kubernetes.io/pcieRoot"] = stringAttribute(facts.pcieRoot);
  }
  // Which checks let a chip that faulted back in: a user can tell a chip whose memory was tested
  // from one that was only reset (the chart's read-only /sys).
  if (!facts.health.recoveredWith.empty()) {
    attributes["recoveredWith"] = stringAttribute(facts.health.recoveredWith);
  }
  return attributes;
}

std::string driverSemver() {
  const std::string_view full = versionString();
  return std::string(full.substr(0, full.find(' ')));
}

std::string deviceGroupId(const std::string& nodeName, const topology::Node& node, int device,
                          int size) {
  if (device < 0 || device >= node.deviceCount()) return "";
  if (size == 1) {
    const std::string& bdf = node.devices[static_cast<std::size_t>(device)].pciBdf;
    return bdf.empty() ? hex16(fnv1a64(nodeName + "/1/" + std::to_string(device))) : bdf;
  }
  // Groups are the allowed connected sets of that size that start on a multiple of it: disjoint,
  // so "equal id" is an equivalence, as matchAttribute needs.
  const topology::ShapeRules rules = topology::shapeRulesOf(node);
  for (const topology::DeviceSet& group : topology::allowedDeviceSets(rules, size)) {
    const std::vector<int> members = group.ids();
    if (members.empty() || members.front() % size != 0 || !group.contains(device)) continue;
    // A cut NeuronLink breaks the group: its devices get no id, so no claim takes them as one.
    if (!topology::NeuronLinkGraph::fromNode(node).isConnected(group)) return "";
    return hex16(
        fnv1a64(nodeName + "/" + std::to_string(size) + "/" + std::to_string(members.front())));
  }
  return "";
}

}  // namespace torus::dra
