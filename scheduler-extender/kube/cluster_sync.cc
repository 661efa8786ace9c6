#include "scheduler-extender/kube/cluster_sync.h"

#include <condition_variable>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/kube/kube_client.h"
#include "scheduler-extender/kube/kube_objects.h"

namespace torus::extender {

ClusterSync::ClusterSync(const kube::KubeConfig& config, ClusterState& state, SyncOptions options)
    : state_(state), options_(options), mirror_(state, options.gangMembers, options.nodeDomains) {
  if (options_.crossResourcePreemption) {
    preemptor_ =
        std::make_unique<CrossResourcePreemptor>(config, state, *options_.crossResourcePreemption);
  }
  nodes_ = std::make_unique<kube::Informer>(
      config, "/api/v1/nodes",
      kube::InformerHandlers{[this](const auto& items) {
                               mirror_.applyNodeList(items);
                               if (preemptor_) preemptor_->applyNodeList(items);
                               if (options_.bindAdmission)
                                 options_.bindAdmission->applyNodeList(items);
                             },
                             [this](const kube::WatchEvent& event) {
                               mirror_.applyNodeEvent(event);
                               if (preemptor_) preemptor_->applyNodeEvent(event);
                               if (options_.bindAdmission)
                                 options_.bindAdmission->applyNodeEvent(event);
                             }},
      options_.informer);
  pods_ = std::make_unique<kube::Informer>(
      config, "/api/v1/pods",
      kube::InformerHandlers{[this](const auto& items) {
                               mirror_.applyPodList(items);
                               if (preemptor_) preemptor_->applyPodList(items);
                               if (options_.bindAdmission)
                                 options_.bindAdmission->applyPodList(items);
                               for (const auto& item : items)
                                 rememberDemand(*item);
                             },
                             [this](const kube::WatchEvent& event) {
                               mirror_.applyPodEvent(event);
                               if (preemptor_) preemptor_->applyPodEvent(event);
                               if (options_.bindAdmission)
                                 options_.bindAdmission->applyPodEvent(event);
                               if (event.object && event.type != "DELETED")
                                 rememberDemand(*event.object);
                             }},
      options_.informer);
  expirer_ = std::jthread([this](std::stop_token stop) { expireLoop(stop); });
  if (options_.podGroups != nullptr) {
    podGroupProbe_ = std::jthread(
        [this, config](std::stop_token stop) { watchPodGroupsIfServed(config, stop); });
  }
}

void ClusterSync::watchPodGroupsIfServed(const kube::KubeConfig& config, std::stop_token stop) {
  constexpr const char* kGroupVersion = "/apis/scheduling.k8s.io/v1beta1";
  kube::KubeClient client(config, std::chrono::seconds(10));
  std::mutex mutex;
  std::condition_variable_any wake;
  while (!stop.stop_requested()) {
    auto resources = client.get(kGroupVersion);
    if (resources) {
      bool served = false;
      const auto list = resources->find("resources");
      if (list != resources->end() && list->is_array()) {
        for (const auto& resource : *list) {
          served = served || (resource.is_object() && resource.value("name", "") == "podgroups");
        }
      }
      if (!served) break;
      PodGroupIndex* index = options_.podGroups;
      podGroups_ = std::make_unique<kube::Informer>(
          config, std::string(kGroupVersion) + "/podgroups",
          kube::InformerHandlers{[index](const auto& items) { index->applyList(items); },
                                 [index](const kube::WatchEvent& event) {
                                   index->apply(*event.object, event.type == "DELETED");
                                 }},
          options_.informer);
      index->setServed(true);
      TORUS_LOG(Info, Extender, "watching PodGroups: their gangs are placed whole",
                {"api", kGroupVersion});
      return;
    }
    if (resources.error().code == ErrorCode::kNotFound) break;
    TORUS_LOG(Warn, Extender, "cannot tell whether the API server serves PodGroups; asking again",
              {"error", resources.error().message});
    std::unique_lock lock(mutex);
    wake.wait_for(lock, stop, std::chrono::seconds(10), [] { return false; });
  }
  if (!stop.stop_requested()) {
    TORUS_LOG(Info, Extender,
              "the API server serves no PodGroups (scheduling.k8s.io/v1beta1); gangs come from "
              "the torus.dev/gang labels only");
  }
}

ClusterSync::~ClusterSync() {
  // Informers first: their callbacks use the rest of this object.
  podGroupProbe_ = {};
  podGroups_.reset();
  pods_.reset();
  nodes_.reset();
}

bool ClusterSync::hasSynced() const {
  return nodes_->hasSynced() && pods_->hasSynced();
}

void ClusterSync::rememberDemand(const nlohmann::json& pod) {
  if (options_.podsFromApi == nullptr) return;
  auto record = parsePodRecord(pod);
  // Only what a bind can ask about: pods that want Neuron and are not bound yet.
  if (!record || !record->demand.wantsNeuron() || !record->nodeName.empty()) return;
  options_.podsFromApi->remember(record->demand);
}

std::string ClusterSync::metricsText() const {
  return preemptor_ ? preemptor_->prometheusText() : "";
}

void ClusterSync::expireLoop(std::stop_token stop) {
  std::mutex mutex;
  std::condition_variable_any wake;
  const auto period =
      std::min<std::chrono::milliseconds>(options_.assumeTtl / 4, std::chrono::seconds(5));
  std::unique_lock lock(mutex);
  while (!wake.wait_for(lock, stop, period, [] { return false; }) && !stop.stop_requested()) {
    for (const Allocation& expired :
         state_.expireAssumptions(std::chrono::steady_clock::now(), options_.assumeTtl)) {
      TORUS_LOG(Warn, Extender, "bind never showed up on the pod; cores given back",
                {"pod", expired.podKey}, {"node", expired.node},
                {"ids", expired.ids.toRangeString()});
    }
  }
}

}  // namespace torus::extender
