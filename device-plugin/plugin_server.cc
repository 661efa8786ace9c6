#include "device-plugin/plugin_server.h"

#include <chrono>

#include <sys/stat.h>
#include <unistd.h>

#include "common/kubelet/unix_address.h"

namespace torus::plugin {

Result<std::unique_ptr<PluginServer>> PluginServer::start(const std::string& socketPath,
                                                          std::unique_ptr<PluginService> service) {
  // A unix socket path is limited to 107 bytes; say so instead of failing obscurely.
  if (socketPath.size() > 107) {
    return makeError(ErrorCode::kInvalidArgument,
                     "socket path longer than 107 bytes: " + socketPath);
  }
  struct stat info {};
  if (::lstat(socketPath.c_str(), &info) == 0) {
    if (!S_ISSOCK(info.st_mode)) {
      return makeError(ErrorCode::kFailedPrecondition,
                       socketPath + " exists and is not a socket; refusing to replace it");
    }
    ::unlink(socketPath.c_str());
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(kubelet::unixAddress(socketPath), grpc::InsecureServerCredentials());
  builder.RegisterService(service.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    return makeError(ErrorCode::kUnavailable, "cannot serve the device plugin on " + socketPath);
  }
  return std::make_unique<PluginServer>(socketPath, std::move(service), std::move(server));
}

PluginServer::PluginServer(std::string socketPath, std::unique_ptr<PluginService> service,
                           std::unique_ptr<grpc::Server> server)
    : socketPath_(std::move(socketPath)),
      service_(std::move(service)),
      server_(std::move(server)) {}

PluginServer::~PluginServer() {
  stop();
}

void PluginServer::stop() {
  if (!server_) return;
  service_->stopStreams();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_.reset();
  ::unlink(socketPath_.c_str());
}

}  // namespace torus::plugin
