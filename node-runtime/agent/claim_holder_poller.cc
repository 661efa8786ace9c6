#include "node-runtime/agent/claim_holder_poller.h"

#include "common/base/log.h"
#include "common/contracts/dra_names.h"

namespace torus::agent {

ClaimHolderPoller::ClaimHolderPoller(std::string socket, std::string pool,
                                     std::chrono::milliseconds interval)
    : pool_(std::move(pool)),
      poll_({std::move(socket), interval, log::Component::kDra,
             "metrics name no pod for claimed cores until it answers"},
            [this](kubelet::PodResourcesRows&& rows) { return replace(std::move(rows)); }) {}

std::vector<dra::ClaimHolder> ClaimHolderPoller::holders() const {
  std::lock_guard lock(mutex_);
  return holders_;
}

bool ClaimHolderPoller::replace(kubelet::PodResourcesRows&& rows) {
  std::vector<dra::ClaimHolder> listed = dra::claimHoldersOf(rows.claims, dra::kDriverName, pool_);
  std::lock_guard lock(mutex_);
  if (listed.size() != holders_.size()) {
    TORUS_LOG(Debug, Dra, "containers using our claims, as pod-resources lists them",
              {"count", static_cast<int>(listed.size())});
  }
  holders_ = std::move(listed);
  return false;
}

}  // namespace torus::agent
