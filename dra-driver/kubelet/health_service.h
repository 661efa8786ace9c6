// Kubelet's DRA resource-health stream (v1 and v1alpha1): the health of every device of the pool,
// sent when a kubelet connects, on every change of the node model and every few seconds besides
// (kubelet marks a device Unknown when it hears nothing for its timeout). Kubelet shows it in the
// status of the pods holding the devices (containerStatuses[].allocatedResourcesStatus).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "common/kubelet/node_view.h"
#include "common/topology/node.h"

namespace torus::dra {

inline constexpr const char* kHealthServiceV1 = "v1.DRAResourceHealth";
inline constexpr const char* kHealthServiceV1alpha1 = "v1alpha1.DRAResourceHealth";

struct DeviceHealthReport {
  std::string device;  // "neurondevice3", "neuroncore12", "neuronnode"
  bool healthy = true;
  std::string message;  // why not, at most 1024 characters
};

// Every device name the pool may hold, with its chip's health.
std::vector<DeviceHealthReport> deviceHealthReports(const topology::Node& node);

std::unique_ptr<grpc::Service> makeHealthServiceV1(kubelet::NodeView& node, std::string pool);
std::unique_ptr<grpc::Service> makeHealthServiceV1alpha1(kubelet::NodeView& node, std::string pool);

}  // namespace torus::dra
