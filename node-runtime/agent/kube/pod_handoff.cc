#include "node-runtime/agent/kube/pod_handoff.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/contracts/neuron_handoff.h"
#include "common/contracts/neuron_names.h"
#include "common/kube/event_object.h"
#include "common/kube/kube_client.h"
#include "common/kube/object_fields.h"

namespace torus::agent {
namespace {

using nlohmann::json;

using kube::annotationOf;

constexpr int kPatchAttempts = 5;
// How long after its end a pod still listed by kubelet keeps the pod-resources reads frequent:
// kubelet's teardown of a pod takes seconds at most; past this, the ordinary poll takes over.
constexpr auto kTeardownWatch = std::chrono::seconds(30);

}  // namespace

std::optional<plugin::PromisedPod> promiseOfPod(const json& pod) {
  if (!pod.is_object()) return std::nullopt;
  const std::string phase = kube::stringField(pod, "status", "phase");
  if (phase == "Succeeded" || phase == "Failed") return std::nullopt;
  plugin::PromisedPod promise;
  promise.uid = kube::stringField(pod, "metadata", "uid");
  promise.key = kube::keyOf(pod);
  auto handoff = contracts::handoffOf(pod);
  if (handoff && !*handoff) return std::nullopt;  // no hand-off on this pod
  if (!handoff || promise.uid.empty()) {
    TORUS_LOG(Warn, Plugin, "ignoring an unreadable scheduler hand-off", {"pod", promise.key},
              {"error", handoff ? std::string("no uid") : handoff.error().message});
    return std::nullopt;
  }
  promise.ids = (*handoff)->ids;
  promise.kind = (*handoff)->resourceType == plugin::resourceName(plugin::ResourceKind::kNeuronCore)
                     ? plugin::ResourceKind::kNeuronCore
                     : plugin::ResourceKind::kNeuron;
  promise.allocTimeNs = (*handoff)->allocTimeNs;
  promise.allocated = (*handoff)->allocated;
  promise.ultraServerNodes = (*handoff)->ultraServerNodes;
  return promise;
}

PodAnnotationHandoff::PodAnnotationHandoff(const kube::KubeConfig& config,
                                           const std::string& nodeName,
                                           kube::InformerOptions options)
    : config_(config),
      nodeName_(nodeName),
      // Only pods that have not ended: finished pods stay in the API until someone deletes them
      // (hundreds after a burst of short jobs), and a list of them all on every cache miss cost
      // tens of MiB in a container limited to 128 MiB. A pod that finishes leaves the selection,
      // so the watch reports it DELETED: that is the end this class signals.
      podsPath_("/api/v1/pods?fieldSelector=spec.nodeName%3D" + nodeName +
                "%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed") {
  patcher_ = std::jthread([this](std::stop_token stop) { patchLoop(stop); });
  informer_ = std::make_unique<kube::Informer>(
      config, podsPath_,
      kube::InformerHandlers{[this](const auto& items) { applyList(items); },
                             [this](const kube::WatchEvent& event) { applyEvent(event); }},
      options);
}

PodAnnotationHandoff::~PodAnnotationHandoff() {
  informer_.reset();
  patcher_.request_stop();
}

namespace {

// Whether a pod that has not finished asks for any of our resources, in any container.
bool asksForNeuron(const json& pod) {
  const std::string phase = kube::stringField(pod, "status", "phase");
  if (phase == "Succeeded" || phase == "Failed") return false;
  for (const char* list : {"containers", "initContainers"}) {
    const json& containers = kube::fieldAt(pod, {"spec", list});
    if (!containers.is_array()) continue;
    for (const json& container : containers) {
      for (const char* amounts : {"limits", "requests"}) {
        const json& resources = kube::fieldAt(container, {"resources", amounts});
        if (!resources.is_object()) continue;
        for (const auto& [name, value] : resources.items()) {
          if (std::ranges::find(contracts::kResourceNames, name) !=
              contracts::kResourceNames.end()) {
            return true;
          }
        }
      }
    }
  }
  return false;
}

// Whether kubelet has admitted the pod, as its status shows: kubelet writes a pod's first status
// (its conditions, Running) only once admission passed. A pod refused there is Failed instead.
bool kubeletAdmitted(const json& pod) {
  if (kube::stringField(pod, "status", "phase") == "Running") return true;
  for (const json& condition : kube::arrayAt(pod, {"status", "conditions"})) {
    const std::string type = kube::stringAt(condition, {"type"});
    if (type == "PodReadyToStartContainers" || type == "Initialized" || type == "Ready" ||
        type == "ContainersReady") {
      return true;
    }
  }
  return false;
}

}  // namespace

void PodAnnotationHandoff::keepLocked(const json& pod) {
  auto promise = promiseOfPod(pod);
  const std::string uid = kube::stringField(pod, "metadata", "uid");
  uids_[kube::keyOf(pod)] = uid;
  if (asksForNeuron(pod) && !kubeletAdmitted(pod)) {
    awaitingAdmission_[uid] = kube::keyOf(pod);
  } else {
    awaitingAdmission_.erase(uid);
  }
  if (!promise) {
    promises_.erase(uid);
    paths_.erase(uid);
    handedOut_.erase(uid);
    corrected_.erase(uid);
    return;
  }
  if (handedOut_.count(uid) != 0) promise->allocated = true;
  // Our correction is on its way to the API; an event from before it must not undo it here.
  if (const auto fixed = corrected_.find(uid); fixed != corrected_.end()) {
    if (promise->ids == fixed->second) {
      corrected_.erase(fixed);
    } else {
      promise->ids = fixed->second;
      promise->allocated = true;
    }
  }
  paths_[uid] = "/api/v1/namespaces/" + kube::stringField(pod, "metadata", "namespace") + "/pods/" +
                kube::stringField(pod, "metadata", "name");
  promises_[uid] = std::move(*promise);
}

void PodAnnotationHandoff::applyList(const std::vector<std::shared_ptr<const json>>& items) {
  std::lock_guard lock(mutex_);
  promises_.clear();
  paths_.clear();
  uids_.clear();
  awaitingAdmission_.clear();
  std::set<std::string> listed;
  for (const auto& item : items) {
    listed.insert(kube::stringField(*item, "metadata", "uid"));
    keepLocked(*item);
  }
  std::erase_if(handedOut_, [&](const std::string& uid) { return listed.count(uid) == 0; });
  std::erase_if(corrected_, [&](const auto& entry) { return listed.count(entry.first) == 0; });
}

void PodAnnotationHandoff::applyEvent(const kube::WatchEvent& event) {
  const std::string phase = kube::stringField(*event.object, "status", "phase");
  const bool ended = event.type == "DELETED" || phase == "Succeeded" || phase == "Failed";
  {
    std::lock_guard lock(mutex_);
    if (ended) {
      endedPods_.emplace(kube::keyOf(*event.object), std::chrono::steady_clock::now());
    }
    if (event.type == "DELETED") {
      const std::string uid = kube::stringField(*event.object, "metadata", "uid");
      promises_.erase(uid);
      paths_.erase(uid);
      handedOut_.erase(uid);
      corrected_.erase(uid);
      awaitingAdmission_.erase(uid);
      if (const auto named = uids_.find(kube::keyOf(*event.object));
          named != uids_.end() && named->second == uid) {
        uids_.erase(named);
      }
    } else {
      keepLocked(*event.object);
    }
  }
  if (ended) podEnded_.notify();
}

std::optional<std::string> PodAnnotationHandoff::uidOf(const std::string& pod) {
  std::lock_guard lock(mutex_);
  const auto found = uids_.find(pod);
  if (found == uids_.end()) return std::nullopt;
  return found->second;
}

std::vector<std::string> PodAnnotationHandoff::awaitingAdmissionExcept(
    const std::set<std::string>& admitted) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> pods;
  for (const auto& [uid, key] : awaitingAdmission_) {
    if (admitted.count(key) == 0) pods.push_back(key);
  }
  return pods;
}

void PodAnnotationHandoff::refreshFromApi() {
  kube::KubeClient client(config_, std::chrono::seconds(2));
  auto list = client.get(podsPath_);
  if (!list) {
    TORUS_LOG(Warn, Plugin, "cannot list this node's pods for the scheduler's hand-off",
              {"error", list.error().message});
    return;
  }
  const auto items = list->find("items");
  if (items == list->end() || !items->is_array()) return;
  std::vector<std::shared_ptr<const json>> pods;
  pods.reserve(items->size());
  for (const json& item : *items)
    pods.push_back(std::make_shared<const json>(item));
  applyList(pods);
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
  if (!match) {
    // kubelet acts on a pod as soon as it is bound, often before our watch shows the pod; the
    // extender wrote AWS_NEURON_IDS before the Binding, so a fresh list has it.
    refreshFromApi();
    {
      std::lock_guard lock(mutex_);
      promises.clear();
      for (const auto& [uid, promise] : promises_)
        promises.push_back(promise);
    }
    match = plugin::matchPromise(promises, kind, size, available, mustInclude);
  }
  if (!match) return std::nullopt;
  TORUS_LOG(Debug, Plugin, "matched the scheduler's hand-off", {"pod", match->key},
            {"ids", match->ids.toRangeString()});
  return match->ids;
}

std::map<std::string, plugin::PromisedPod>::iterator PodAnnotationHandoff::openPromiseLocked(
    plugin::ResourceKind kind, const topology::CoreSet& ids) {
  return std::find_if(promises_.begin(), promises_.end(), [&](const auto& entry) {
    const plugin::PromisedPod& promise = entry.second;
    return !promise.allocated && promise.ids == ids &&
           plugin::countsDevices(promise.kind) == plugin::countsDevices(kind);
  });
}

std::optional<int> PodAnnotationHandoff::ultraServerNodes(plugin::ResourceKind kind,
                                                          const topology::CoreSet& ids) {
  std::lock_guard lock(mutex_);
  const auto open = openPromiseLocked(kind, ids);
  return open == promises_.end() ? std::nullopt : open->second.ultraServerNodes;
}

void PodAnnotationHandoff::allocated(plugin::ResourceKind kind, const topology::CoreSet& ids) {
  std::lock_guard lock(mutex_);
  const auto open = openPromiseLocked(kind, ids);
  if (open == promises_.end()) return;
  open->second.allocated = true;
  handedOut_.insert(open->first);
  queueLocked(open->first, {{contracts::kAllocatedAnnotation, "true"}},
              "marked the scheduler's hand-off allocated");
}

void PodAnnotationHandoff::queueLocked(const std::string& uid, json annotations, std::string what) {
  json body;
  body["metadata"]["uid"] = uid;
  body["metadata"]["annotations"] = std::move(annotations);
  patches_.push_back({paths_[uid], promises_[uid].key, std::move(body), std::move(what)});
  wake_.notify_all();
}

bool PodAnnotationHandoff::kubeletHolds(const std::vector<plugin::Holder>& holders) {
  // A pod's ids of one kind, over all its containers (AWS_NEURON_IDS is per pod).
  std::map<std::pair<std::string, bool>, topology::CoreSet> held;
  std::set<std::string> listed;
  for (const plugin::Holder& holder : holders) {
    held[{holder.pod, plugin::countsDevices(holder.kind)}] |= holder.ids;
    listed.insert(holder.pod);
  }
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(endedPods_, [&](const auto& ended) {
    return listed.count(ended.first) == 0 || now - ended.second > kTeardownWatch;
  });
  for (auto& [uid, promise] : promises_) {
    const auto actual = held.find({promise.key, plugin::countsDevices(promise.kind)});
    if (actual == held.end()) continue;
    if (actual->second == promise.ids) {
      if (!promise.allocated) {
        promise.allocated = true;
        handedOut_.insert(uid);
        queueLocked(uid, {{contracts::kAllocatedAnnotation, "true"}},
                    "marked the scheduler's hand-off allocated");
      }
      continue;
    }
    TORUS_LOG(Warn, Plugin,
              "a pod holds other ids than the scheduler promised it; correcting its hand-off",
              {"pod", promise.key}, {"promised", promise.ids.toRangeString()},
              {"holds", actual->second.toRangeString()});
    promise.ids = actual->second;
    promise.allocated = true;
    handedOut_.insert(uid);
    corrected_[uid] = actual->second;
    queueLocked(uid,
                {{contracts::kNeuronIdsAnnotation, actual->second.toListString()},
                 {contracts::kAllocatedAnnotation, "true"}},
                "corrected the hand-off to the ids the pod holds");
  }
  return !endedPods_.empty();
}

void PodAnnotationHandoff::refused(plugin::ResourceKind kind, const topology::CoreSet& ids,
                                   const std::string& why) {
  std::lock_guard lock(mutex_);
  for (const auto& [uid, promise] : promises_) {
    if (promise.allocated || promise.ids != ids ||
        plugin::countsDevices(promise.kind) != plugin::countsDevices(kind)) {
      continue;
    }
    const std::size_t slash = promise.key.find('/');
    const std::string ns = promise.key.substr(0, slash);
    const std::string name = slash == std::string::npos ? "" : promise.key.substr(slash + 1);
    json event = kube::eventObject({"Pod", name, ns, uid}, ns, false, "PromiseRefused",
                                   "the scheduler extender chose " +
                                       std::string(plugin::resourceName(kind)) + " " +
                                       ids.toRangeString() + ", but on this node as discovered " +
                                       why + "; the device plugin places this pod itself",
                                   "neuron-node-agent", nodeName_);
    patches_.push_back({"/api/v1/namespaces/" + ns + "/events", promise.key, std::move(event),
                        "posted a PromiseRefused event", true});
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
    for (int attempt = 1; attempt <= kPatchAttempts && !stop.stop_requested(); ++attempt) {
      auto patched = patch.create ? client.create(patch.path, patch.body)
                                  : client.mergePatch(patch.path, patch.body);
      if (patched) {
        TORUS_LOG(Info, Plugin, patch.what, {"pod", patch.key});
        break;
      }
      const bool retry =
          patched.error().code == ErrorCode::kUnavailable && attempt < kPatchAttempts;
      TORUS_LOG(Warn, Plugin, "could not update the scheduler's hand-off", {"pod", patch.key},
                {"change", patch.what}, {"error", patched.error().message}, {"attempt", attempt},
                {"retrying", retry});
      if (!retry) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
    }
    lock.lock();
  }
}

}  // namespace torus::agent
