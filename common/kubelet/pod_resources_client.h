// PodResourcesClient: one List call on kubelet's pod-resources socket, answered as kubelet's own
// rows — which container holds which device-plugin ids, and which uses which ResourceClaim's
// devices. Neither kubelet adapter's types appear here: the device plugin turns rows into its
// assignments, the DRA driver into the holders of its claims.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace torus::kubelet {

// One container's ids of one extended resource (ContainerDevices in kubelet's API).
struct ContainerDevices {
  std::string podNamespace;
  std::string pod;
  std::string container;
  std::string resourceName;
  std::vector<std::string> deviceIds;
};

// One device of a claim as kubelet lists it (ClaimResource.CDIDevices aside).
struct ClaimDevice {
  std::string driver;
  std::string pool;
  std::string device;
};

// One container's use of one ResourceClaim (DynamicResource in kubelet's API; GA since
// Kubernetes 1.36, beta and on by default since 1.34).
struct ContainerClaim {
  std::string podNamespace;
  std::string pod;
  std::string container;
  std::string claimNamespace;
  std::string claimName;
  std::vector<ClaimDevice> devices;
};

struct PodResourcesRows {
  std::vector<ContainerDevices> devices;
  std::vector<ContainerClaim> claims;
};

// The channel is made once and reconnects by itself.
class PodResourcesClient {
 public:
  explicit PodResourcesClient(std::string socket);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  Result<PodResourcesRows> list(std::chrono::milliseconds timeout);
  const std::string& socket() const { return socket_; }

 private:
  struct Lister;  // the gRPC stub, kept out of this header
  std::string socket_;
  std::unique_ptr<Lister> lister_;
};

}  // namespace torus::kubelet
