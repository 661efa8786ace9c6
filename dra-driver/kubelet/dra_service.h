// Kubelet's DRA gRPC services (v1 and v1beta1, same calls) over ClaimDriver. Every claim in a
// request gets its own answer: one claim's error never fails its neighbours. A claim to prepare
// is read from the API and checked (checkAllocatedClaim) before the driver sees it.
#pragma once

#include <memory>

#include <grpcpp/grpcpp.h>

#include "dra-driver/kubelet/claim_driver.h"

namespace torus::dra {

// The services kubelet is told about in plugin registration, newest first.
inline constexpr const char* kServiceV1 = "v1.DRAPlugin";
inline constexpr const char* kServiceV1beta1 = "v1beta1.DRAPlugin";

// `claims` reads a ResourceClaim by namespace and name (the API in production).
std::unique_ptr<grpc::Service> makeDraServiceV1(ClaimDriver& driver, ObjectReader claims);
std::unique_ptr<grpc::Service> makeDraServiceV1beta1(ClaimDriver& driver, ObjectReader claims);

}  // namespace torus::dra
