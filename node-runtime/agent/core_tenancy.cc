#include "node-runtime/agent/core_tenancy.h"

#include "device-plugin/resource_kind.h"
#include "dra-driver/driver_names.h"

namespace torus::agent {

bool usesClaim(const plugin::ClaimHolder& holder, const dra::ClaimRef& claim) {
  return holder.claimNamespace == claim.nameSpace && holder.claimName == claim.name;
}

std::vector<metrics::Tenancy> tenanciesOf(const topology::Node& node,
                                          const plugin::Assignments& assignments,
                                          const dra::PreparedClaims& claims,
                                          const std::vector<plugin::ClaimHolder>& claimHolders) {
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
    for (const plugin::ClaimHolder& holder : claimHolders) {
      if (!usesClaim(holder, claim.ref)) continue;
      tenancies.push_back({holder.pod, holder.podNamespace, holder.container,
                           std::string(dra::kDriverName), claim.cores});
    }
  }
  return tenancies;
}

}  // namespace torus::agent
