// EventPoster: posts the extender's core/v1 Events on pods from a thread of its own, so a bind
// answers kube-scheduler as soon as its Binding is written (an Event doubled a bind's time).
// Events are a courtesy: when more than `capacity` wait (the API server is away), the oldest are
// dropped and counted; nothing blocks the caller.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/kube/kube_config.h"

namespace torus::extender {

// A core/v1 Event about a pod, from the extender (kube::eventObject), stamped now.
nlohmann::json podEventObject(const std::string& podName, const std::string& podNamespace,
                              const std::string& podUid, bool normal, const std::string& reason,
                              const std::string& message);

class EventPoster {
 public:
  explicit EventPoster(kube::KubeConfig config, std::size_t capacity = 1024);
  ~EventPoster();  // posts what is queued, for at most about 3 s (plus one call in flight)
  EventPoster(const EventPoster&) = delete;
  EventPoster& operator=(const EventPoster&) = delete;

  // `event` is a core/v1 Event for a pod in `podNamespace`; `podKey` and `reason` are for logs.
  void post(const std::string& podNamespace, nlohmann::json event, std::string podKey,
            std::string reason);
  std::uint64_t dropped() const;

 private:
  struct Pending {
    std::string path;
    nlohmann::json event;
    std::string podKey;
    std::string reason;
  };
  void run(std::stop_token stop);

  kube::KubeConfig config_;
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  std::deque<Pending> queue_;
  std::uint64_t dropped_ = 0;
  bool draining_ = false;
  std::chrono::steady_clock::time_point drainUntil_;
  std::jthread thread_;  // last: it uses the members above
};

}  // namespace torus::extender
