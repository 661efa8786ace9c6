#include "dra-driver/claim_holders.h"

#include <algorithm>

namespace torus::dra {

std::vector<ClaimHolder> claimHoldersOf(const std::vector<kubelet::ContainerClaim>& rows,
                                        std::string_view driver, std::string_view pool) {
  std::vector<ClaimHolder> holders;
  for (const kubelet::ContainerClaim& row : rows) {
    const bool ours = std::any_of(row.devices.begin(), row.devices.end(), [&](const auto& device) {
      return device.driver == driver && device.pool == pool;
    });
    if (!ours) continue;
    holders.push_back(
        {row.claimNamespace, row.claimName, row.podNamespace, row.pod, row.container});
  }
  return holders;
}

}  // namespace torus::dra
