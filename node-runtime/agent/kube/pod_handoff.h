// PodAnnotationHandoff: the device plugin's view of what the scheduler extender decided. It
// watches the pods bound to this node that have not ended (fieldSelector on spec.nodeName and
// status.phase) and keeps their promises (AWS_NEURON_IDS, NEURON_ALLOC_TIME,
// NEURON_RESOURCE_TYPE, NEURON_ALLOCATED); after kubelet
// allocates promised ids it sets NEURON_ALLOCATED=true on that pod — one merge-patch of that key
// alone, pinned to the pod's UID, sent from a background thread so Allocate never waits on the
// API server. It also tells when a pod on the node ends (finished or deleted), so the device
// plugin re-reads kubelet's assignments at once instead of at its next poll, and keeps re-reading
// them often while kubelet still lists the ended pod (its teardown).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/change_notifier.h"
#include "common/kube/informer.h"
#include "common/kube/kube_config.h"
#include "device-plugin/scheduler_handoff.h"

namespace torus::agent {

// A pod as the API returns it -> its promise; nullopt when it carries none (or a finished pod).
std::optional<plugin::PromisedPod> promiseOfPod(const nlohmann::json& pod);

class PodAnnotationHandoff final : public plugin::SchedulerHandoff {
 public:
  PodAnnotationHandoff(const kube::KubeConfig& config, const std::string& nodeName,
                       kube::InformerOptions options = {});
  ~PodAnnotationHandoff() override;

  std::optional<topology::CoreSet> promisedIds(plugin::ResourceKind kind, int size,
                                               const topology::CoreSet& available,
                                               const topology::CoreSet& mustInclude) override;
  void allocated(plugin::ResourceKind kind, const topology::CoreSet& ids) override;
  std::optional<int> ultraServerNodes(plugin::ResourceKind kind,
                                      const topology::CoreSet& ids) override;
  bool kubeletHolds(const std::vector<plugin::Holder>& holders) override;
  void refused(plugin::ResourceKind kind, const topology::CoreSet& ids,
               const std::string& why) override;

  bool hasSynced() const { return informer_->hasSynced(); }
  // The UID of the pod of this node named namespace/name, while the watch shows it running or
  // about to; nullopt otherwise.
  std::optional<std::string> uidOf(const std::string& pod);
  // Runs when the watch shows a pod of this node finished (Succeeded, Failed) or deleted.
  ChangeNotifier::Subscription onPodEnded(std::function<void()> notify) {
    return podEnded_.subscribe(std::move(notify));
  }
  // Pods bound here asking for a Neuron resource that kubelet has not admitted yet: not finished,
  // no status from kubelet, and not among `admitted` (namespace/name, as pod-resources names the
  // pods kubelet gave ids to; a short pod may have come and gone from there before its status).
  std::vector<std::string> awaitingAdmissionExcept(const std::set<std::string>& admitted);

 private:
  struct Patch {
    std::string path;
    std::string key;
    nlohmann::json body;  // a merge-patch pinned to the pod's UID, or an Event to create
    std::string what;     // for the log
    bool create = false;  // body is an Event: POST it to `path` instead of patching
  };
  void applyList(const std::vector<std::shared_ptr<const nlohmann::json>>& items);
  void applyEvent(const kube::WatchEvent& event);
  void keepLocked(const nlohmann::json& pod);
  // The promise not yet handed out whose ids are exactly `ids` of `kind`'s unit, or end().
  std::map<std::string, plugin::PromisedPod>::iterator openPromiseLocked(
      plugin::ResourceKind kind, const topology::CoreSet& ids);
  void queueLocked(const std::string& uid, nlohmann::json annotations, std::string what);
  // A fresh list of this node's pods, straight from the API: kubelet may ask for a pod's ids
  // before the watch has delivered the extender's annotation on it.
  void refreshFromApi();
  void patchLoop(std::stop_token stop);

  kube::KubeConfig config_;
  std::string nodeName_;
  std::string podsPath_;  // this node's pods
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::map<std::string, plugin::PromisedPod> promises_;  // by UID
  std::map<std::string, std::string> paths_;             // UID -> API path of the pod
  std::map<std::string, std::string> uids_;              // namespace/name -> UID, every pod
  std::set<std::string> handedOut_;                      // allocated here, before the API shows it
  std::map<std::string, topology::CoreSet> corrected_;   // UID -> ids we wrote as what it holds
  std::deque<Patch> patches_;
  ChangeNotifier podEnded_;
  // UID -> namespace/name: pods asking for Neuron that kubelet has not admitted yet.
  std::map<std::string, std::string> awaitingAdmission_;
  // namespace/name -> when the API showed it ended; kept while kubelet still lists the pod.
  std::map<std::string, std::chrono::steady_clock::time_point> endedPods_;
  std::jthread patcher_;
  std::unique_ptr<kube::Informer> informer_;  // last: its thread calls into the rest
};

}  // namespace torus::agent
