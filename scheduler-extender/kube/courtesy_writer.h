// CourtesyWriter: the extender's writes that help without being needed — core/v1 Events on pods,
// and the node a gang's plan nominates for each member (status.nominatedNodeName, which makes
// kube-scheduler try that node first) — from a thread of its own, so a bind or a filter answers
// kube-scheduler at once (an Event doubled a bind's time). When more than `capacity` wait (the
// API server is away), the oldest are dropped and counted; nothing blocks the caller.
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

class CourtesyWriter {
 public:
  explicit CourtesyWriter(kube::KubeConfig config, std::size_t capacity = 1024);
  ~CourtesyWriter();  // posts what is queued, for at most about 3 s (plus one call in flight)
  CourtesyWriter(const CourtesyWriter&) = delete;
  CourtesyWriter& operator=(const CourtesyWriter&) = delete;

  // `event` is a core/v1 Event for a pod in `podNamespace`; `podKey` and `reason` are for logs.
  void post(const std::string& podNamespace, nlohmann::json event, std::string podKey,
            std::string reason);
  // Sets the pod's status.nominatedNodeName (a merge patch of pods/status).
  void nominate(const std::string& podNamespace, const std::string& podName,
                const std::string& node);
  std::uint64_t dropped() const;

 private:
  struct Pending {
    std::string path;
    nlohmann::json body;  // an Event to create, or a merge patch (isPatch)
    bool isPatch = false;
    std::string podKey;
    std::string reason;  // for logs: the Event's reason, or what the patch does
  };
  void enqueue(Pending pending);
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
