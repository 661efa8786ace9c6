#include "node-runtime/agent/pod_handoff.h"

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/kube/kube_client.h"
#include "common/kube/neuron_annotations.h"

namespace torus::agent {
namespace {

using nlohmann::json;

std::string stringAt(const json& object, const char* first, const char* second) {
  const auto outer = object.find(first);
  if (outer == object.end() || !outer->is_object()) return "";
  const auto inner = outer->find(second);
  return inner != outer->end() && inner->is_string() ? inner->get<std::string>() : "";
}

std::string annotation(const json& pod, const char* key) {
  const auto metadata = pod.find("metadata");
  if (metadata == pod.end() || !metadata->is_object()) return "";
  const auto annotations = metadata->find("annotations");
  if (annotations == metadata->end() || !annotations->is_object()) return "";
  const auto value = annotations->find(key);
  return value != annotations->end() && value->is_string() ? value->get<std::string>() : "";
}

constexpr int kPatchAttempts = 5;

}  // namespace

std::optional<plugin::PromisedPod> promiseOfPod(const json& pod) {
  if (!pod.is_object()) return std::nullopt;
  const std::string idsText = annotation(pod, kube::kNeuronIdsAnnotation);
  const std::string phase = stringAt(pod, "status", "phase");
  if (idsText.empty() || phase == "Succeeded" || phase == "Failed") return std::nullopt;
  plugin::PromisedPod promise;
  promise.uid = stringAt(pod, "metadata", "uid");
  promise.key = stringAt(pod, "metadata", "namespace") + "/" + stringAt(pod, "metadata", "name");
  auto ids = topology::CoreSet::parse(idsText);
  if (!ids || ids->empty() || promise.uid.empty()) {
    TORUS_LOG(Warn, Plugin, "ignoring an unreadable scheduler hand-off", {"pod", promise.key},
              {"annotation", std::string(kube::kNeuronIdsAnnotation) + "=" + idsText});
    return std::nullopt;
  }
  promise.ids = *ids;
  // AWS's extension sets the type only for core requests; no type means whole devices.
  const std::string type = annotation(pod, kube::kResourceTypeAnnotation);
  promise.kind = type == "aws.amazon.com/neuroncore" ? plugin::ResourceKind::kNeuronCore
                                                     : plugin::ResourceKind::kNeuron;
  if (auto time = parseInt64(annotation(pod, kube::kAllocTimeAnnotation), 0, INT64_MAX)) {
    promise.allocTimeNs = *time;
  }
  promise.allocated = annotation(pod, kube::kAllocatedAnnotation) == "true";
  return promise;
}

PodAnnotationHandoff::PodAnnotationHandoff(const kube::KubeConfig& config,
                                           const std::string& nodeName,
                                           kube::InformerOptions options)
    : config_(config) {
  patcher_ = std::jthread([this](std::stop_token stop) { patchLoop(stop); });
  informer_ = std::make_unique<kube::Informer>(
      config, "/api/v1/pods?fieldSelector=spec.nodeName%3D" + nodeName,
      kube::InformerHandlers{[this](const auto& items) { applyList(items); },
                             [this](const kube::WatchEvent& event) { applyEvent(event); }},
      options);
}

PodAnnotationHandoff::~PodAnnotationHandoff() {
  informer_.reset();
  patcher_.request_stop();
}

void PodAnnotationHandoff::keepLocked(const json& pod) {
  auto promise = promiseOfPod(pod);
  const std::string uid = stringAt(pod, "metadata", "uid");
  if (!promise) {
    promises_.erase(uid);
    paths_.erase(uid);
    handedOut_.erase(uid);
    return;
  }
  if (handedOut_.count(uid) != 0) promise->allocated = true;
  paths_[uid] = "/api/v1/namespaces/" + stringAt(pod, "metadata", "namespace") + "/pods/" +
                stringAt(pod, "metadata", "name");
  promises_[uid] = std::move(*promise);
}

void PodAnnotationHandoff::applyList(const std::vector<std::shared_ptr<const json>>& items) {
  std::lock_guard lock(mutex_);
  promises_.clear();
  paths_.clear();
  std::set<std::string> listed;
  for (const auto& item : items) {
    listed.insert(stringAt(*item, "metadata", "uid"));
    keepLocked(*item);
  }
  std::erase_if(handedOut_, [&](const std::string& uid) { return listed.count(uid) == 0; });
}

void PodAnnotationHandoff::applyEvent(const kube::WatchEvent& event) {
  std::lock_guard lock(mutex_);
  if (event.type == "DELETED") {
    const std::string uid = stringAt(*event.object, "metadata", "uid");
    promises_.erase(uid);
    paths_.erase(uid);
    handedOut_.erase(uid);
    return;
  }
  keepLocked(*event.object);
}

std::optional<topology::CoreSet> PodAnnotationHandoff::promisedIds(
    plugin::ResourceKind kind, int size, const topology::CoreSet& available,
    const topology::CoreSet& mustInclude) {
  std::vector<plugin::PromisedPod> promises;
  {
    std::lock_guard lock(mutex_);
    promises.reserve(promises_.size());
    for (const auto& [uid, promise] : promises_)
      promises.push_back(promise);
  }
  auto match = plugin::matchPromise(promises, kind, size, available, mustInclude);
  if (!match) return std::nullopt;
  TORUS_LOG(Debug, Plugin, "matched the scheduler's hand-off", {"pod", match->key},
            {"ids", match->ids.toRangeString()});
  return match->ids;
}

void PodAnnotationHandoff::allocated(plugin::ResourceKind kind, const topology::CoreSet& ids) {
  std::lock_guard lock(mutex_);
  for (auto& [uid, promise] : promises_) {
    if (promise.allocated || promise.ids != ids ||
        plugin::countsDevices(promise.kind) != plugin::countsDevices(kind)) {
      continue;
    }
    promise.allocated = true;
    handedOut_.insert(uid);
    patches_.push_back({paths_[uid], uid, promise.key});
    wake_.notify_all();
    return;
  }
}

void PodAnnotationHandoff::patchLoop(std::stop_token stop) {
  kube::KubeClient client(config_);
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, stop, [&] { return !patches_.empty(); });
    if (stop.stop_requested()) return;
    Patch patch = std::move(patches_.front());
    patches_.pop_front();
    lock.unlock();
    json body = kube::annotationPatch(kube::kAllocatedAnnotation, "true");
    body["metadata"]["uid"] = patch.uid;
    for (int attempt = 1; attempt <= kPatchAttempts && !stop.stop_requested(); ++attempt) {
      auto patched = client.mergePatch(patch.path, body);
      if (patched) {
        TORUS_LOG(Info, Plugin, "marked the scheduler's hand-off allocated", {"pod", patch.key});
        break;
      }
      const bool retry =
          patched.error().code == ErrorCode::kUnavailable && attempt < kPatchAttempts;
      TORUS_LOG(Warn, Plugin, "could not mark the hand-off allocated", {"pod", patch.key},
                {"error", patched.error().message}, {"attempt", attempt}, {"retrying", retry});
      if (!retry) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
    }
    lock.lock();
  }
}

}  // namespace torus::agent
