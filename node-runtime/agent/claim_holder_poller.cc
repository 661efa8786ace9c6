#include "node-runtime/agent/claim_holder_poller.h"

#include "common/base/log.h"
#include "dra-driver/driver_names.h"

namespace torus::agent {

ClaimHolderPoller::ClaimHolderPoller(std::string socket, std::string pool,
                                     std::chrono::milliseconds interval)
    : client_(std::move(socket)),
      pool_(std::move(pool)),
      interval_(interval),
      thread_([this](std::stop_token stop) { run(stop); }) {}

ClaimHolderPoller::~ClaimHolderPoller() {
  thread_.request_stop();
  wake_.notify_all();
}

std::vector<plugin::ClaimHolder> ClaimHolderPoller::holders() const {
  std::lock_guard lock(mutex_);
  return holders_;
}

void ClaimHolderPoller::run(std::stop_token stop) {
  bool reachable = true;
  while (!stop.stop_requested()) {
    auto listed = client_.listClaimHolders(dra::kDriverName, pool_, std::chrono::seconds(5));
    std::unique_lock lock(mutex_);
    if (listed) {
      if (!reachable) TORUS_LOG(Info, Dra, "pod-resources API reachable again");
      reachable = true;
      if (listed->size() != holders_.size()) {
        TORUS_LOG(Debug, Dra, "containers using our claims, as pod-resources lists them",
                  {"count", static_cast<int>(listed->size())});
      }
      holders_ = std::move(*listed);
    } else if (reachable) {
      reachable = false;
      TORUS_LOG(Warn, Dra,
                "cannot read kubelet's pod-resources; metrics name no pod for claimed cores until "
                "it answers",
                {"error", listed.error().message},
                {"retry_ms", static_cast<int>(interval_.count())});
    }
    wake_.wait_for(lock, stop, interval_, [] { return false; });
  }
}

}  // namespace torus::agent
