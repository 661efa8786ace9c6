#include "device-plugin/kubelet_registration.h"

#include <grpcpp/grpcpp.h>

#include "common/kubelet/unix_address.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace torus::plugin {

Result<void> registerWithKubelet(const std::string& kubeletSocket, const std::string& endpoint,
                                 ResourceKind kind, std::chrono::milliseconds timeout) {
  auto channel =
      grpc::CreateChannel(kubelet::unixAddress(kubeletSocket), grpc::InsecureChannelCredentials());
  auto registration = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_endpoint(endpoint);
  request.set_resource_name(std::string(resourceName(kind)));
  request.mutable_options()->set_pre_start_required(true);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1beta1::Empty response;
  const grpc::Status status = registration->Register(&context, request, &response);
  if (!status.ok()) {
    return makeError(status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                         ? ErrorCode::kDeadlineExceeded
                         : ErrorCode::kUnavailable,
                     "registering " + std::string(resourceName(kind)) + " with kubelet at " +
                         kubeletSocket + ": " + status.error_message());
  }
  return okResult();
}

}  // namespace torus::plugin
