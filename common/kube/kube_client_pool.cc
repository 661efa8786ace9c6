#include "common/kube/kube_client_pool.h"

namespace torus::kube {

KubeClientPool::KubeClientPool(KubeConfig config, std::size_t maxIdle,
                               std::chrono::milliseconds timeout)
    : config_(std::move(config)), maxIdle_(maxIdle), timeout_(timeout) {}

KubeClientPool::Lease KubeClientPool::acquire() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto client = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(client));
    }
  }
  return Lease(*this, std::make_unique<KubeClient>(config_, timeout_));
}

std::size_t KubeClientPool::idleCount() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

void KubeClientPool::giveBack(std::unique_ptr<KubeClient> client) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < maxIdle_) idle_.push_back(std::move(client));
}

}  // namespace torus::kube
