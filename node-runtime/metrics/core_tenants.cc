#include "node-runtime/metrics/core_tenants.h"

#include <set>
#include <vector>

#include "common/base/strings.h"
#include "common/contracts/agent_metrics.h"

namespace torus::metrics {
namespace {

namespace wire = contracts::agent_metrics;

// Sorted and without duplicates; an empty name (no namespace, say) adds nothing.
std::string joined(const std::set<std::string>& values) {
  const std::vector<std::string> named(values.upper_bound(""), values.end());
  return joinStrings(named, ",");
}

}  // namespace

CoreTenants::CoreTenants(const topology::Node& node, std::vector<Tenancy> tenancies)
    : tenancies_(std::move(tenancies)) {
  const int cores = node.logicalCoreCount();
  for (std::size_t i = 0; i < tenancies_.size(); ++i) {
    for (const int core : tenancies_[i].cores.ids()) {
      if (core < 0 || core >= cores) continue;  // ids from another LNC: not this node's cores
      byCore_[core].push_back(i);
      const int device = node.deviceOfCore(core);
      deviceOfCore_[core] = device;
      auto& holders = byDevice_[device];
      if (holders.empty() || holders.back() != i) holders.push_back(i);
    }
  }
}

metrics::Labels CoreTenants::labelsOf(const std::vector<std::size_t>& tenancies) const {
  std::set<std::string> pods;
  std::set<std::string> namespaces;
  std::set<std::string> containers;
  std::set<std::string> claims;
  std::set<std::string> claimNamespaces;
  std::set<std::string> devices;
  std::set<std::string> pools;
  std::set<std::string> drivers;
  for (const std::size_t i : tenancies) {
    const Tenancy& tenancy = tenancies_[i];
    pods.insert(tenancy.pod);
    namespaces.insert(tenancy.nameSpace);
    containers.insert(tenancy.container);
    claims.insert(tenancy.claim.claimName);
    claimNamespaces.insert(tenancy.claim.claimNamespace);
    devices.insert(tenancy.claim.device);
    pools.insert(tenancy.claim.pool);
    drivers.insert(tenancy.claim.driver);
  }
  return {{wire::kPodLabel, joined(pods)},
          {wire::kNamespaceLabel, joined(namespaces)},
          {wire::kContainerLabel, joined(containers)},
          {"dra_claim_name", joined(claims)},
          {"dra_claim_namespace", joined(claimNamespaces)},
          {"dra_device_name", joined(devices)},
          {"dra_pool_name", joined(pools)},
          {"dra_driver_name", joined(drivers)}};
}

metrics::Labels CoreTenants::coreLabels(int core) const {
  const auto it = byCore_.find(core);
  return labelsOf(it == byCore_.end() ? std::vector<std::size_t>{} : it->second);
}

metrics::Labels CoreTenants::deviceLabels(int device) const {
  const auto it = byDevice_.find(device);
  return labelsOf(it == byDevice_.end() ? std::vector<std::size_t>{} : it->second);
}

void CoreTenants::render(metrics::PrometheusText& out, const metrics::Labels& base) const {
  out.family(wire::kAllocationInfo, "gauge",
             "1 for each NeuronCore a container holds: who, through which resource, and where.");
  for (const auto& [core, holders] : byCore_) {
    for (const std::size_t i : holders) {
      const Tenancy& tenancy = tenancies_[i];
      metrics::Labels labels = base;
      labels.insert(labels.end(),
                    {{wire::kPodLabel, tenancy.pod},
                     {wire::kNamespaceLabel, tenancy.nameSpace},
                     {wire::kContainerLabel, tenancy.container},
                     {wire::kResourceLabel, tenancy.resource},
                     {wire::kCoreLabel, std::to_string(core)},
                     {wire::kDeviceIndexLabel, std::to_string(deviceOfCore_.at(core))},
                     {"dra_claim_name", tenancy.claim.claimName},
                     {"dra_claim_namespace", tenancy.claim.claimNamespace},
                     {"dra_device_name", tenancy.claim.device},
                     {"dra_pool_name", tenancy.claim.pool},
                     {"dra_driver_name", tenancy.claim.driver}});
      out.sample(wire::kAllocationInfo, labels, 1);
    }
  }
}

}  // namespace torus::metrics
