// A kubelet stand-in that speaks the exact v1beta1 wire format over real unix sockets: it serves
// Registration on <dir>/kubelet.sock, dials each plugin back as kubelet does (options, then a
// ListAndWatch stream kept open), and serves pod-resources v1 List from a list the test sets.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "podresources/v1/api.grpc.pb.h"

namespace torus::testing {

struct SeenDevice {
  std::string health;
  int numaNode = -1;
};

class FakeKubelet {
 public:
  FakeKubelet(std::string pluginDir, std::string podResourcesSocket);
  ~FakeKubelet();

  // Starts (or, after stop(), restarts) the Registration server: kubelet.sock appears.
  void start();
  // Stops serving and, like a restarting kubelet, deletes every file in the plugin directory.
  void stopAndWipe();

  // Waits until `resource` has registered `count` times in total.
  bool waitForRegistration(const std::string& resource, int count,
                           std::chrono::milliseconds timeout);
  v1beta1::RegisterRequest lastRegistration(const std::string& resource);
  // Waits until the latest ListAndWatch list of `resource` satisfies `check`.
  bool waitForDevices(const std::string& resource,
                      const std::function<bool(const std::map<std::string, SeenDevice>&)>& check,
                      std::chrono::milliseconds timeout);
  std::map<std::string, SeenDevice> devices(const std::string& resource);
  // The first list the `stream`-th ListAndWatch stream of `resource` (counted from 1) gave, once
  // it has; nullopt after `timeout`.
  std::optional<std::map<std::string, SeenDevice>> firstListOfStream(
      const std::string& resource, int stream, std::chrono::milliseconds timeout);
  int healthyCount(const std::string& resource);

  // A client for the plugin serving `resource`, over its own socket.
  std::unique_ptr<v1beta1::DevicePlugin::Stub> pluginClient(const std::string& resource);

  // What pod-resources List answers: resource -> ids held by one container each.
  void setAssignments(std::map<std::string, std::vector<std::string>> held);
  // The same, naming the pods: what kubelet really gave each one.
  struct PodHolding {
    std::string podNamespace;
    std::string pod;
    std::string resource;
    std::vector<std::string> ids;
  };
  void setPodAssignments(std::vector<PodHolding> held);
  // pod-resources List answers what `source` returns when it is called (a model of kubelet's
  // device manager), instead of the list set above.
  void setListSource(std::function<std::vector<PodHolding>()> source);
  // How many pod-resources Lists were answered so far.
  int listsAnswered();
  // Waits until more than `count` Lists were answered; false after `timeout`.
  bool waitForListsAfter(int count, std::chrono::milliseconds timeout);
  // Each pod-resources List answers only after `delay` (a kubelet busy admitting pods).
  void setListDelay(std::chrono::milliseconds delay);
  // While true, pod-resources List answers UNAVAILABLE (kubelet busy or rate-limiting).
  void setListRefused(bool refused);

 private:
  class Registration;
  class PodResources;
  void watchPlugin(std::string resource, std::string endpoint);

  const std::string dir_;
  const std::string podResourcesSocket_;
  std::unique_ptr<Registration> registration_;
  std::unique_ptr<PodResources> podResources_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::Server> podResourcesServer_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, int> registrations_;
  std::map<std::string, v1beta1::RegisterRequest> lastRequest_;
  std::map<std::string, std::string> endpoints_;
  std::map<std::string, std::map<std::string, SeenDevice>> devices_;
  std::map<std::string, std::vector<std::map<std::string, SeenDevice>>> firstLists_;
  std::vector<std::unique_ptr<grpc::ClientContext>> streams_;
  std::vector<std::jthread> watchers_;
};

}  // namespace torus::testing
