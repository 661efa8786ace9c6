// KubeletViewPublisher: keeps the Node's torus.dev/kubelet-unavailable annotation equal to what
// kubelet would refuse a new pod (the plugin's last lists and what kubelet still counts in use),
// so the scheduler extender offers only ids kubelet will admit; removes the restarting taint once
// kubelet has every resource's list and its pod-resources has said which ids its pods hold, and
// sets it when the agent stops
// (common/contracts/kubelet_view.h). Retries with backoff while the API server is away; a publish
// never holds up the plugin.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/base/change_notifier.h"
#include "common/kube/kube_client.h"
#include "device-plugin/plugin_manager.h"

namespace torus::agent {

class KubeletViewPublisher {
 public:
  KubeletViewPublisher(const kube::KubeConfig& config, std::string nodeName,
                       plugin::DevicePluginManager& plugins);
  ~KubeletViewPublisher();
  KubeletViewPublisher(const KubeletViewPublisher&) = delete;
  KubeletViewPublisher& operator=(const KubeletViewPublisher&) = delete;

  // The agent is about to close its plugin sockets: publish no more, and taint the node so that
  // no scheduler binds a Neuron pod here until the next agent serves kubelet again.
  Result<void> stopServing();

 private:
  void run(std::stop_token stop);
  Result<void> publish();

  kube::KubeClient client_;
  const std::string nodeName_;
  plugin::DevicePluginManager& plugins_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  bool dirty_ = true;
  bool stopped_ = false;
  std::mutex apiMutex_;  // one write at a time: an untaint must never follow stopServing's taint
  std::optional<std::string> published_;  // the annotation as last written
  bool taintCleared_ = false;             // known absent since kubelet last had our lists
  bool saidAwaitingHolders_ = false;      // logged that pod-resources keeps the taint on
  ChangeNotifier::Subscription reportChanged_;
  ChangeNotifier::Subscription assignmentsChanged_;
  std::jthread thread_;
};

}  // namespace torus::agent
