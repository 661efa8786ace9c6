// The attributes a chip publishes in its pool (its cores share them), in AWS's names: deviceId,
// instanceType, versions, torus coordinates, the NeuronLink group ids, EC2 network layers and the
// PCI placement. Pure functions of the node model and the Node's labels.
// Owns no slice layout, capacity or taints: slice_builder.h assembles devices from these.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "common/topology/node.h"

namespace torus::dra {

// One attribute value of each DRA type: {"int": v}, {"string": v}, {"version": v}.
nlohmann::json intAttribute(std::int64_t value);
nlohmann::json stringAttribute(const std::string& value);
nlohmann::json versionAttribute(const std::string& value);

// The attributes chip `device` of `node` publishes and its cores share (without resourceType):
// network layers come from `nodeLabels` (topology.k8s.aws/network-node-layer-N) when present.
nlohmann::json chipAttributes(const std::string& nodeName, const topology::Node& node,
                              const std::map<std::string, std::string>& nodeLabels, int device);

// The semantic version published as draDriverVersion ("0.1.0").
std::string driverSemver();

// The id shared by the devices of one NeuronLink-connected group of `size` (1, 4, 8, 16) that
// `device` belongs to, or "" when it is in no whole, connected group of that size.
std::string deviceGroupId(const std::string& nodeName, const topology::Node& node, int device,
                          int size);

}  // namespace torus::dra
