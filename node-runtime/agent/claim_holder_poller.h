// ClaimHolderPoller: in DRA mode, asks kubelet's pod-resources API every interval which
// containers use claims with our driver's devices, for the metrics' pod labels. A missing socket
// is logged once (WARN) and retried; until it answers, claims' cores carry no pod labels.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device-plugin/pod_resources_poller.h"

namespace torus::agent {

class ClaimHolderPoller {
 public:
  ClaimHolderPoller(std::string socket, std::string pool, std::chrono::milliseconds interval);
  ~ClaimHolderPoller();
  ClaimHolderPoller(const ClaimHolderPoller&) = delete;
  ClaimHolderPoller& operator=(const ClaimHolderPoller&) = delete;

  std::vector<plugin::ClaimHolder> holders() const;

 private:
  void run(std::stop_token stop);

  plugin::PodResourcesClient client_;
  const std::string pool_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  std::vector<plugin::ClaimHolder> holders_;
  std::jthread thread_;
};

}  // namespace torus::agent
