#include "node-runtime/agent/kube/kubelet_view_publisher.h"

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/contracts/kubelet_view.h"
#include "node-runtime/agent/kube/restarting_taint.h"

namespace torus::agent {

KubeletViewPublisher::KubeletViewPublisher(const kube::KubeConfig& config, std::string nodeName,
                                           plugin::DevicePluginManager& plugins)
    : client_(config, std::chrono::seconds(5)), nodeName_(std::move(nodeName)), plugins_(plugins) {
  const auto markDirty = [this] {
    std::lock_guard lock(mutex_);
    dirty_ = true;
    wake_.notify_all();
  };
  reportChanged_ = plugins_.kubeletReport().onChange(markDirty);
  assignmentsChanged_ = plugins_.onAssignmentsChange(markDirty);
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

KubeletViewPublisher::~KubeletViewPublisher() {
  reportChanged_ = {};
  assignmentsChanged_ = {};
  thread_.request_stop();
  client_.cancel();
}

Result<void> KubeletViewPublisher::publish() {
  std::lock_guard api(apiMutex_);
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return okResult();
  }
  const auto told = plugins_.kubeletUnavailable();
  if (told) {
    const std::string value = contracts::renderKubeletUnavailable(*told);
    if (value != published_) {
      auto patched = client_.mergePatch(
          "/api/v1/nodes/" + nodeName_,
          kube::annotationPatch(contracts::kKubeletUnavailableAnnotation, value));
      if (!patched) return std::move(patched).error();
      published_ = value;
      TORUS_LOG(Debug, Plugin, "published what kubelet was told", {"node", nodeName_},
                {"unhealthy", value});
    }
  }
  // The taint goes only once the Node says what kubelet refuses, held ids included: removed
  // while kubelet's pod-resources has not answered, the extender would offer ids kubelet's
  // running pods hold.
  const bool serving = plugins_.kubeletReport().serving();
  if (!told || !serving) {
    if (serving && !saidAwaitingHolders_) {
      TORUS_LOG(Info, Plugin,
                "kubelet has our lists, but its pod-resources has not answered: the node keeps "
                "the restarting taint until it says which ids its pods hold",
                {"node", nodeName_}, {"taint", contracts::kRestartingTaintKey});
      saidAwaitingHolders_ = true;
    }
    taintCleared_ = false;
    return okResult();
  }
  if (taintCleared_) return okResult();
  auto removed = setRestartingTaint(client_, nodeName_, false);
  if (!removed) return std::move(removed).error();
  taintCleared_ = true;
  if (*removed) {
    TORUS_LOG(Info, Plugin, "kubelet counts our devices again; removed the restarting taint",
              {"node", nodeName_}, {"taint", contracts::kRestartingTaintKey});
  }
  return okResult();
}

Result<void> KubeletViewPublisher::stopServing() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  std::lock_guard api(apiMutex_);
  auto tainted = setRestartingTaint(client_, nodeName_, true);
  if (!tainted) return std::move(tainted).error();
  TORUS_LOG(Info, Plugin,
            "tainted the node while the device plugin stops: no Neuron pod is bound here until "
            "the next agent serves kubelet",
            {"node", nodeName_}, {"taint", contracts::kRestartingTaintKey});
  return okResult();
}

void KubeletViewPublisher::run(std::stop_token stop) {
  std::chrono::milliseconds backoff(200);
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    wake_.wait(lock, stop, [&] { return dirty_ || stopped_; });
    if (stop.stop_requested() || stopped_) return;
    dirty_ = false;
    lock.unlock();
    auto published = publish();
    lock.lock();
    if (published) {
      backoff = std::chrono::milliseconds(200);
      continue;
    }
    if (stop.stop_requested()) return;
    TORUS_LOG(Warn, Plugin, "could not publish what kubelet was told on the node",
              {"node", nodeName_}, {"error", published.error().message},
              {"retry_in_ms", static_cast<std::int64_t>(backoff.count())});
    dirty_ = true;
    wake_.wait_for(lock, stop, backoff, [] { return false; });
    backoff = std::min(backoff * 2, std::chrono::milliseconds(10'000));
  }
}

}  // namespace torus::agent
