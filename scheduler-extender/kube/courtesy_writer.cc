#include "scheduler-extender/kube/courtesy_writer.h"

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

CourtesyWriter::CourtesyWriter(kube::KubeConfig config, std::size_t capacity)
    : config_(std::move(config)),
      capacity_(capacity),
      thread_([this](std::stop_token stop) { run(stop); }) {}

CourtesyWriter::~CourtesyWriter() {
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
    drainUntil_ = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  }
  wake_.notify_all();
  thread_.join();
}

void CourtesyWriter::post(const std::string& podNamespace, nlohmann::json event, std::string podKey,
                          std::string reason) {
  enqueue({"/api/v1/namespaces/" + podNamespace + "/events", std::move(event), false,
           std::move(podKey), std::move(reason)});
}

void CourtesyWriter::nominate(const std::string& podNamespace, const std::string& podName,
                              const std::string& node) {
  enqueue({"/api/v1/namespaces/" + podNamespace + "/pods/" + podName + "/status",
           {{"status", {{"nominatedNodeName", node}}}},
           true,
           podNamespace + "/" + podName,
           "nominate " + node});
}

void CourtesyWriter::enqueue(Pending pending) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= capacity_) {
      queue_.pop_front();
      if (dropped_++ == 0) {
        TORUS_LOG(Warn, Extender,
                  "events and nominations are not getting through; dropping the oldest",
                  {"queued", static_cast<int>(capacity_)});
      }
    }
    queue_.push_back(std::move(pending));
  }
  wake_.notify_one();
}

std::uint64_t CourtesyWriter::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

void CourtesyWriter::run(std::stop_token stop) {
  // Short timeouts: a slow API server must not hold up the drain at shutdown for long.
  kube::KubeClient client(config_, std::chrono::seconds(3));
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, stop, [&] { return !queue_.empty() || draining_; });
    if (queue_.empty() || stop.stop_requested()) return;
    if (draining_) {
      if (std::chrono::steady_clock::now() > drainUntil_) {
        TORUS_LOG(Warn, Extender, "stopping with events or nominations not written",
                  {"events", static_cast<int>(queue_.size())});
        return;
      }
    }
    Pending next = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    auto written = next.isPatch ? client.mergePatch(next.path, next.body)
                                : client.create(next.path, next.body);
    if (!written) {
      // A courtesy: the bind or the plan stands without it.
      TORUS_LOG(Warn, Extender, next.isPatch ? "could not patch pod" : "could not post event",
                {"pod", next.podKey}, {"reason", next.reason}, {"error", written.error().message});
    }
    lock.lock();
  }
}

}  // namespace torus::extender
