#include "node-runtime/agent/core_tenancy.h"

#include "common/contracts/dra_names.h"
#include "device-plugin/resource_kind.h"

namespace torus::agent {

bool usesClaim(const dra::ClaimHolder& holder, const dra::ClaimRef& claim) {
  return holder.claimNamespace == claim.nameSpace && holder.claimName == claim.name;
}

std::vector<metrics::Tenancy> tenanciesOf(const topology::Node& node,
                                          const plugin::Assignments& assignments,
                                          const dra::PreparedClaims& claims,
                                          const std::vector<dra::ClaimHolder>& claimHolders) {
  std::vector<metrics::Tenancy> tenancies;
  for (const plugin::Holder& holder : assignments.holders) {
    // The tracker names pods "namespace/name", as kubelet's pod-resources gives them.
    const std::size_t slash = holder.pod.find('/');
    metrics::Tenancy tenancy;
    tenancy.nameSpace = slash == std::string::npos ? "" : holder.pod.substr(0, slash);
    tenancy.pod = slash == std::string::npos ? holder.pod : holder.pod.substr(slash + 1);
    tenancy.container = holder.container;
    tenancy.resource = std::string(plugin::resourceName(holder.kind));
    tenancy.cores = plugin::coresOfIds(holder.kind, node, holder.ids);
    tenancies.push_back(std::move(tenancy));
  }
  for (const auto& [uid, claim] : claims) {
    for (const dra::ClaimHolder& holder : claimHolders) {
      if (!usesClaim(holder, claim.ref)) continue;
      // One tenancy per device, so each core is labelled with the claim's device it is part of;
      // a device the claim has admin access to only is not held.
      for (const dra::AllocatedDevice& device : claim.devices) {
        const topology::CoreSet cores = dra::coresOfDevice(device.what, node) & claim.cores;
        if (cores.empty()) continue;
        tenancies.push_back({holder.pod,
                             holder.podNamespace,
                             holder.container,
                             std::string(dra::kDriverName),
                             cores,
                             {claim.ref.name, claim.ref.nameSpace, device.name, claim.pool,
                              std::string(dra::kDriverName)}});
      }
    }
  }
  return tenancies;
}

}  // namespace torus::agent
