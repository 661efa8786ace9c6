// KubeletPlugin: how kubelet finds and calls the driver. It serves the DRA services on
// <plugins-dir>/neuron.aws.com/dra.sock and the plugin-registration service on
// <registry-dir>/neuron.aws.com-reg.sock, with the resource-health stream (health_service.h) on
// the DRA socket too; kubelet's plugin watcher sees the registration socket,
// asks GetInfo, connects to the DRA socket and reports back through NotifyRegistrationStatus.
// A watchdog re-creates the sockets if they disappear (a kubelet reinstall wiping its
// directories), so kubelet registers the driver again without an agent restart.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "common/base/result.h"
#include "common/kubelet/node_view.h"
#include "dra-driver/kubelet/claim_driver.h"

namespace torus::dra {

struct KubeletPluginOptions {
  std::filesystem::path pluginsDir = "/var/lib/kubelet/plugins";
  std::filesystem::path registryDir = "/var/lib/kubelet/plugins_registry";
};

class KubeletPlugin {
 public:
  // `claims` reads the ResourceClaims kubelet asks to prepare (see dra_service.h); `node` and
  // `pool` feed the resource-health stream.
  static Result<std::unique_ptr<KubeletPlugin>> start(KubeletPluginOptions options,
                                                      ClaimDriver& driver, ObjectReader claims,
                                                      kubelet::NodeView& node, std::string pool);
  KubeletPlugin(KubeletPluginOptions options, ClaimDriver& driver, ObjectReader claims,
                kubelet::NodeView& node, std::string pool);
  ~KubeletPlugin();
  KubeletPlugin(const KubeletPlugin&) = delete;
  KubeletPlugin& operator=(const KubeletPlugin&) = delete;

  std::filesystem::path draSocket() const;
  std::filesystem::path registrationSocket() const;
  // Whether kubelet's last NotifyRegistrationStatus said the plugin is registered.
  bool registered() const { return registered_.load(); }
  // Why kubelet cannot use the driver right now ("" when it can): a socket gone (the watchdog
  // serves it again), or no registration since the sockets were last served.
  std::string notReadyReason() const;
  void stop();

 private:
  struct Servers;
  Result<void> serve();
  void watch(std::stop_token stop);
  void registrationStatus(bool registered, const std::string& error);

  KubeletPluginOptions options_;
  ClaimDriver& driver_;
  ObjectReader claims_;
  kubelet::NodeView& node_;
  std::string pool_;
  std::atomic<bool> registered_{false};
  std::mutex mutex_;
  std::unique_ptr<Servers> servers_;
  std::jthread watchdog_;
};

}  // namespace torus::dra
