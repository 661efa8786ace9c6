#include "dra-driver/kubelet/dra_service.h"

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/metrics/event_counters.h"
#include "common/metrics/latency_histograms.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"

namespace torus::dra {
namespace {

// Kubelet sends the claims of one pod; far more than this is not kubelet.
constexpr int kMaxClaimsPerCall = 1024;

// Kubernetes object names are at most 253 characters, namespaces 63; a UID is a 36-character
// UUID. Anything longer is not from kubelet, and is not echoed back into logs and answers.
constexpr std::size_t kMaxName = 253;
constexpr std::size_t kMaxUid = 128;

template <typename Claim>
Result<ClaimRef> refOf(const Claim& claim) {
  if (claim.uid().size() > kMaxUid || claim.namespace_().size() > kMaxName ||
      claim.name().size() > kMaxName) {
    return makeError(ErrorCode::kInvalidArgument,
                     "a claim's uid, namespace or name is longer than Kubernetes allows");
  }
  if (claim.uid().empty() || claim.namespace_().empty() || claim.name().empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     "a claim needs a uid, a namespace and a name (got uid \"" + claim.uid() +
                         "\", " + claim.namespace_() + "/" + claim.name() + ")");
  }
  return ClaimRef{claim.uid(), claim.namespace_(), claim.name()};
}

void count(const char* family, bool ok) {
  metrics::processCounters().add(family, {{"result", ok ? "ok" : "error"}});
}

// As upstream's helper: the claim kubelet names is read, and must be that claim (its UID) and
// allocated, before the driver sees it.
Result<std::vector<PreparedDevice>> prepareOne(ClaimDriver& driver, const ObjectReader& claims,
                                               const ClaimRef& ref) {
  auto object = claims(ref.nameSpace, ref.name);
  if (!object) return std::move(object).error().withContext("reading claim " + ref.key());
  if (auto checked = checkAllocatedClaim(*object, ref); !checked) return std::move(checked).error();
  return driver.prepare(ref, *object);
}

template <typename Request, typename Response>
grpc::Status prepareAll(ClaimDriver& driver, const ObjectReader& claims, const Request& request,
                        Response& response) {
  const metrics::ScopedLatency timed(metrics::names::kDraRequestSeconds, {{"call", "prepare"}});
  if (request.claims_size() > kMaxClaimsPerCall) {
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "more than " + std::to_string(kMaxClaimsPerCall) + " claims in one call"};
  }
  for (const auto& claim : request.claims()) {
    auto& answer = (*response.mutable_claims())[claim.uid()];
    auto ref = refOf(claim);
    auto devices = ref ? prepareOne(driver, claims, *ref)
                       : Result<std::vector<PreparedDevice>>(std::move(ref).error());
    count(metrics::names::kDraPrepareTotal, devices.ok());
    if (!devices) {
      TORUS_LOG(Warn, Dra, "NodePrepareResources refused a claim",
                {"uid", claim.uid().substr(0, kMaxUid)}, {"error", devices.error().message});
      answer.set_error(devices.error().message);
      continue;
    }
    for (const PreparedDevice& device : *devices) {
      auto* out = answer.add_devices();
      // A prioritized-list result names "request/subrequest"; kubelet matches a container's
      // claim reference against the bare request name.
      for (const std::string& name : device.requests)
        out->add_request_names(baseRequestName(name));
      out->set_pool_name(device.pool);
      out->set_device_name(device.device);
      for (const std::string& id : device.cdiIds)
        out->add_cdi_device_ids(id);
    }
  }
  return grpc::Status::OK;
}

template <typename Request, typename Response>
grpc::Status unprepareAll(ClaimDriver& driver, const Request& request, Response& response) {
  const metrics::ScopedLatency timed(metrics::names::kDraRequestSeconds, {{"call", "unprepare"}});
  if (request.claims_size() > kMaxClaimsPerCall) {
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "more than " + std::to_string(kMaxClaimsPerCall) + " claims in one call"};
  }
  for (const auto& claim : request.claims()) {
    auto& answer = (*response.mutable_claims())[claim.uid()];
    auto ref = refOf(claim);
    auto done = ref ? driver.unprepare(*ref) : Result<void>(std::move(ref).error());
    count(metrics::names::kDraUnprepareTotal, done.ok());
    if (!done) {
      TORUS_LOG(Warn, Dra, "NodeUnprepareResources failed for a claim",
                {"uid", claim.uid().substr(0, kMaxUid)}, {"error", done.error().message});
      answer.set_error(done.error().message);
    }
  }
  return grpc::Status::OK;
}

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

class ServiceV1 final : public v1::DRAPlugin::Service {
 public:
  ServiceV1(ClaimDriver& driver, ObjectReader claims)
      : driver_(driver), claims_(std::move(claims)) {}
  grpc::Status NodePrepareResources(grpc::ServerContext*, const v1::NodePrepareResourcesRequest* in,
                                    v1::NodePrepareResourcesResponse* out) override {
    return prepareAll(driver_, claims_, *in, *out);
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                      const v1::NodeUnprepareResourcesRequest* in,
                                      v1::NodeUnprepareResourcesResponse* out) override {
    return unprepareAll(driver_, *in, *out);
  }

 private:
  ClaimDriver& driver_;
  ObjectReader claims_;
};

class ServiceV1beta1 final : public v1beta1::DRAPlugin::Service {
 public:
  ServiceV1beta1(ClaimDriver& driver, ObjectReader claims)
      : driver_(driver), claims_(std::move(claims)) {}
  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const v1beta1::NodePrepareResourcesRequest* in,
                                    v1beta1::NodePrepareResourcesResponse* out) override {
    return prepareAll(driver_, claims_, *in, *out);
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                      const v1beta1::NodeUnprepareResourcesRequest* in,
                                      v1beta1::NodeUnprepareResourcesResponse* out) override {
    return unprepareAll(driver_, *in, *out);
  }

 private:
  ClaimDriver& driver_;
  ObjectReader claims_;
};

}  // namespace

std::unique_ptr<grpc::Service> makeDraServiceV1(ClaimDriver& driver, ObjectReader claims) {
  return std::make_unique<ServiceV1>(driver, std::move(claims));
}

std::unique_ptr<grpc::Service> makeDraServiceV1beta1(ClaimDriver& driver, ObjectReader claims) {
  return std::make_unique<ServiceV1beta1>(driver, std::move(claims));
}

}  // namespace torus::dra
