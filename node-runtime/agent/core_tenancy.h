// Joins what the device plugin and the DRA driver hold into one list of tenancies for the
// metrics' pod/namespace/container labels: the plugin's holders as kubelet's pod-resources
// lists them, and each prepared claim's cores under every container pod-resources says uses it.
// A claim prepared but not listed yet (its containers are being created) has no tenancy until
// the next List. Pure.
#pragma once

#include <vector>

#include "common/topology/node.h"
#include "device-plugin/assignments.h"
#include "dra-driver/checkpoint.h"
#include "dra-driver/claim_holders.h"
#include "node-runtime/metrics/core_tenants.h"

namespace torus::agent {

// Whether kubelet lists `holder` as a container using `claim`.
bool usesClaim(const dra::ClaimHolder& holder, const dra::ClaimRef& claim);

std::vector<metrics::Tenancy> tenanciesOf(const topology::Node& node,
                                          const plugin::Assignments& assignments,
                                          const dra::PreparedClaims& claims,
                                          const std::vector<dra::ClaimHolder>& claimHolders);

}  // namespace torus::agent
