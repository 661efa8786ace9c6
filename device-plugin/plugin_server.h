// PluginServer: one resource's DevicePlugin gRPC server on its own unix socket in the
// device-plugin directory. Serve first, then register (kubelet dials back during Register).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "common/base/result.h"
#include "device-plugin/plugin_service.h"

namespace torus::plugin {

class PluginServer {
 public:
  // Removes a stale socket of ours at the same path, then listens.
  static Result<std::unique_ptr<PluginServer>> start(const std::string& socketPath,
                                                     std::unique_ptr<PluginService> service);
  PluginServer(std::string socketPath, std::unique_ptr<PluginService> service,
               std::unique_ptr<grpc::Server> server);
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  const std::string& socketPath() const { return socketPath_; }
  void stop();

 private:
  std::string socketPath_;
  std::unique_ptr<PluginService> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace torus::plugin
