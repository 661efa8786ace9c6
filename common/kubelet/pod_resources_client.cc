#include "common/kubelet/pod_resources_client.h"

#include <grpcpp/grpcpp.h>

#include "common/kubelet/unix_address.h"
#include "podresources/v1/api.grpc.pb.h"

namespace torus::kubelet {

struct PodResourcesClient::Lister {
  std::unique_ptr<v1::PodResourcesLister::Stub> rpc;
};

PodResourcesClient::PodResourcesClient(std::string socket)
    : socket_(std::move(socket)), lister_(std::make_unique<Lister>()) {
  lister_->rpc = v1::PodResourcesLister::NewStub(
      grpc::CreateChannel(unixAddress(socket_), grpc::InsecureChannelCredentials()));
}

PodResourcesClient::~PodResourcesClient() = default;

Result<PodResourcesRows> PodResourcesClient::list(std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::ListPodResourcesResponse response;
  const grpc::Status status =
      lister_->rpc->List(&context, v1::ListPodResourcesRequest(), &response);
  if (!status.ok()) {
    return makeError(ErrorCode::kUnavailable,
                     "pod-resources List at " + socket_ + ": " + status.error_message());
  }
  PodResourcesRows rows;
  for (const auto& pod : response.pod_resources()) {
    for (const auto& container : pod.containers()) {
      for (const auto& devices : container.devices()) {
        rows.devices.push_back({pod.namespace_(),
                                pod.name(),
                                container.name(),
                                devices.resource_name(),
                                {devices.device_ids().begin(), devices.device_ids().end()}});
      }
      for (const auto& claim : container.dynamic_resources()) {
        ContainerClaim row{pod.namespace_(),        pod.name(),         container.name(),
                           claim.claim_namespace(), claim.claim_name(), {}};
        for (const auto& device : claim.claim_resources()) {
          row.devices.push_back({device.driver_name(), device.pool_name(), device.device_name()});
        }
        rows.claims.push_back(std::move(row));
      }
    }
  }
  return rows;
}

}  // namespace torus::kubelet
