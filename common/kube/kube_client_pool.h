// KubeClientPool: kept-alive API connections for callers that run in parallel.
//
// A KubeClient serialises its requests on one connection; a new client per call pays a TCP and
// TLS handshake every time (the extender's bind made three calls on three new connections:
// ~100 ms idle, 270-340 ms in bursts). A caller borrows an idle client for the duration of its
// calls and gives it back by dropping the lease; at most `maxIdle` are kept.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "common/kube/kube_client.h"

namespace torus::kube {

class KubeClientPool {
 public:
  explicit KubeClientPool(KubeConfig config, std::size_t maxIdle = 8,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

  class Lease {
   public:
    Lease(KubeClientPool& pool, std::unique_ptr<KubeClient> client)
        : pool_(&pool), client_(std::move(client)) {}
    Lease(Lease&&) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (client_) pool_->giveBack(std::move(client_));
    }
    KubeClient& operator*() const { return *client_; }
    KubeClient* operator->() const { return client_.get(); }

   private:
    KubeClientPool* pool_;
    std::unique_ptr<KubeClient> client_;
  };

  Lease acquire();
  std::size_t idleCount() const;

 private:
  void giveBack(std::unique_ptr<KubeClient> client);

  KubeConfig config_;
  std::size_t maxIdle_;
  std::chrono::milliseconds timeout_;  // of each client it makes
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<KubeClient>> idle_;
};

}  // namespace torus::kube
