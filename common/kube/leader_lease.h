// LeaderLease: at most one holder of a coordination.k8s.io/v1 Lease at a time, as client-go's
// leader election keeps it, so a controller can run several replicas and act in one.
//
// The holder renews the lease every `retryPeriod`; a holder that cannot renew for
// `renewDeadline` gives it up. Another candidate takes over once it has seen the same record,
// unrenewed, for `leaseDuration` by its own clock: the holder's renewTime is never compared with
// the local clock, so skew between machines cannot make two leaders. Every write carries the
// resourceVersion it read, so two candidates racing for a free lease cannot both win. stop()
// releases a held lease (holderIdentity cleared), so a successor need not wait out the duration.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/kube/kube_client.h"

namespace torus::kube {

struct LeaseOptions {
  std::string nameSpace;
  std::string name;
  std::string identity;  // unique per candidate: pod name and a random suffix
  std::chrono::milliseconds leaseDuration{std::chrono::seconds(15)};
  std::chrono::milliseconds renewDeadline{std::chrono::seconds(10)};
  std::chrono::milliseconds retryPeriod{std::chrono::seconds(2)};
};

struct LeaseCallbacks {
  std::function<void()> startedLeading;  // called on the lease's thread
  std::function<void()> stoppedLeading;  // after a lost renewal, never after stop()
};

class LeaderLease {
 public:
  LeaderLease(KubeConfig config, LeaseOptions options, LeaseCallbacks callbacks);
  ~LeaderLease();  // stop()
  LeaderLease(const LeaderLease&) = delete;
  LeaderLease& operator=(const LeaderLease&) = delete;

  void start();
  // Stops campaigning and releases the lease if held.
  void stop();
  bool isLeader() const { return leader_.load(); }

  // One attempt to acquire or renew (the thread's step, public for tests): true when this
  // candidate holds the lease afterwards.
  Result<bool> tryAcquireOrRenew();

 private:
  void run(std::stop_token stop);
  std::string path() const;
  nlohmann::json record(const nlohmann::json& previous, bool takingOver) const;
  void release();

  KubeClient client_;
  LeaseOptions options_;
  LeaseCallbacks callbacks_;
  std::atomic<bool> leader_{false};

  std::mutex mutex_;  // the observed record (tryAcquireOrRenew may run on the test's thread)
  std::string observedHolder_;
  std::string observedRenewTime_;
  std::chrono::steady_clock::time_point observedAt_{};
  std::chrono::steady_clock::time_point lastRenewal_{};

  std::jthread thread_;
};

// A candidate identity for this process: $POD_NAME (or the host name) and 8 random hex digits.
std::string leaseIdentity();

}  // namespace torus::kube
