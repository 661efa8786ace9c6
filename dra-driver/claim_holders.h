// Which containers use claims with this driver's devices, from kubelet's pod-resources rows: the
// pod labels of the metrics of claimed cores, and the tenants a core reset must wait for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/kubelet/pod_resources_client.h"

namespace torus::dra {

// A container that uses a ResourceClaim with devices of one DRA driver's pool.
struct ClaimHolder {
  std::string claimNamespace;
  std::string claimName;
  std::string podNamespace;
  std::string pod;
  std::string container;
  bool operator==(const ClaimHolder&) const = default;
};

// The rows whose claim has at least one device of `driver` in `pool`.
std::vector<ClaimHolder> claimHoldersOf(const std::vector<kubelet::ContainerClaim>& rows,
                                        std::string_view driver, std::string_view pool);

}  // namespace torus::dra
