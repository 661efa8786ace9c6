#include "scheduler-extender/kube/event_poster.h"

#include <chrono>

#include "common/base/log.h"
#include "common/kube/event_object.h"
#include "common/kube/kube_client.h"

namespace torus::extender {

nlohmann::json podEventObject(const std::string& podName, const std::string& podNamespace,
                              const std::string& podUid, bool normal, const std::string& reason,
                              const std::string& message) {
  return kube::eventObject({"Pod", podName, podNamespace, podUid}, podNamespace, normal, reason,
                           message, "neuron-scheduler-extender");
}

EventPoster::EventPoster(kube::KubeConfig config, std::size_t capacity)
    : config_(std::move(config)),
      capacity_(capacity),
      thread_([this](std::stop_token stop) { run(stop); }) {}

EventPoster::~EventPoster() {
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
    drainUntil_ = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  }
  wake_.notify_all();
  thread_.join();
}

void EventPoster::post(const std::string& podNamespace, nlohmann::json event, std::string podKey,
                       std::string reason) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= capacity_) {
      queue_.pop_front();
      if (dropped_++ == 0) {
        TORUS_LOG(Warn, Extender, "events are not getting through; dropping the oldest",
                  {"queued", static_cast<int>(capacity_)});
      }
    }
    queue_.push_back({"/api/v1/namespaces/" + podNamespace + "/events", std::move(event),
                      std::move(podKey), std::move(reason)});
  }
  wake_.notify_one();
}

std::uint64_t EventPoster::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

void EventPoster::run(std::stop_token stop) {
  // Short timeouts: a slow API server must not hold up the drain at shutdown for long.
  kube::KubeClient client(config_, std::chrono::seconds(3));
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, stop, [&] { return !queue_.empty() || draining_; });
    if (queue_.empty() || stop.stop_requested()) return;
    if (draining_) {
      if (std::chrono::steady_clock::now() > drainUntil_) {
        TORUS_LOG(Warn, Extender, "stopping with events not posted",
                  {"events", static_cast<int>(queue_.size())});
        return;
      }
    }
    Pending next = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (auto created = client.create(next.path, next.event); !created) {
      // An event is a courtesy; the bind stands without it.
      TORUS_LOG(Warn, Extender, "could not post event", {"pod", next.podKey},
                {"reason", next.reason}, {"error", created.error().message});
    }
    lock.lock();
  }
}

}  // namespace torus::extender
