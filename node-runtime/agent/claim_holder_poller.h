// ClaimHolderPoller: in DRA mode, which containers use claims with our driver's devices, as
// kubelet's pod-resources API lists them every interval (the shared kubelet::PodResourcesPoll),
// for the metrics' pod labels. Until the socket answers, claims' cores carry no pod labels.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "common/kubelet/pod_resources_poll.h"
#include "dra-driver/claim_holders.h"

namespace torus::agent {

class ClaimHolderPoller {
 public:
  ClaimHolderPoller(std::string socket, std::string pool, std::chrono::milliseconds interval);

  std::vector<dra::ClaimHolder> holders() const;

 private:
  bool replace(kubelet::PodResourcesRows&& rows);

  const std::string pool_;
  mutable std::mutex mutex_;
  std::vector<dra::ClaimHolder> holders_;
  kubelet::PodResourcesPoll poll_;  // last: its thread calls replace()
};

}  // namespace torus::agent
