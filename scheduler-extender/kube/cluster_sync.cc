#include "scheduler-extender/kube/cluster_sync.h"

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/base/sleep_until_stopped.h"
#include "common/kube/kube_client.h"
#include "common/metrics/prometheus_text.h"
#include "scheduler-extender/kube/kube_objects.h"

namespace torus::extender {

ClusterSync::ClusterSync(const kube::KubeConfig& config, ClusterState& state, SyncOptions options)
    : state_(state), options_(options), mirror_(state, options.gangMembers, options.nodeDomains) {
  nodeFacts_ = options_.nodeFacts;
  if (nodeFacts_ == nullptr) {
    ownFacts_ = std::make_unique<NodeFactsIndex>();
    nodeFacts_ = ownFacts_.get();
  }
  if (options_.crossResourcePreemption) {
    preemptor_ = std::make_unique<CrossResourcePreemptor>(config, state, *nodeFacts_,
                                                          *options_.crossResourcePreemption);
  }
  nodes_ = std::make_unique<kube::Informer>(
      config, "/api/v1/nodes",
      kube::InformerHandlers{[this](const auto& items) { applyNodes(items); },
                             [this](const kube::WatchEvent& event) { applyNodeEvent(event); }},
      options_.informer);
  pods_ = std::make_unique<kube::Informer>(
      config, "/api/v1/pods",
      kube::InformerHandlers{[this](const auto& items) { applyPods(items); },
                             [this](const kube::WatchEvent& event) { applyPodEvent(event); }},
      options_.informer);
  expirer_ = std::jthread([this](std::stop_token stop) { expireLoop(stop); });
  if (options_.podGroups != nullptr) {
    podGroupProbe_ = std::jthread(
        [this, config](std::stop_token stop) { watchPodGroupsIfServed(config, stop); });
  }
}

void ClusterSync::applyNodes(const std::vector<std::shared_ptr<const nlohmann::json>>& items) {
  std::vector<NodeUpdate> nodes;
  nodes.reserve(items.size());
  for (const auto& item : items)
    nodes.push_back(parseNodeUpdate(*item, false));
  nodeFacts_->applyList(nodes);
  mirror_.applyNodes(nodes);
}

void ClusterSync::applyNodeEvent(const kube::WatchEvent& event) {
  if (!event.object) return;
  const NodeUpdate node = parseNodeUpdate(*event.object, event.type == "DELETED");
  nodeFacts_->apply(node);
  mirror_.applyNode(node);
}

void ClusterSync::applyPods(const std::vector<std::shared_ptr<const nlohmann::json>>& items) {
  std::vector<PodUpdate> pods;
  pods.reserve(items.size());
  podObjectsReceived_ += items.size();
  for (const auto& item : items)
    pods.push_back(parsePodUpdate(*item, false));
  mirror_.applyPods(pods);
  if (preemptor_) preemptor_->applyPods(pods);
  if (options_.bindAdmission) options_.bindAdmission->applyPods(pods);
  for (const PodUpdate& pod : pods)
    rememberDemand(pod);
}

void ClusterSync::applyPodEvent(const kube::WatchEvent& event) {
  if (!event.object) return;
  const PodUpdate pod = parsePodUpdate(*event.object, event.type == "DELETED");
  if (!pod.deleted) ++podObjectsReceived_;
  mirror_.applyPod(pod);
  if (preemptor_) preemptor_->applyPod(pod);
  if (options_.bindAdmission) options_.bindAdmission->applyPod(pod);
  rememberDemand(pod);
}

void ClusterSync::watchPodGroupsIfServed(const kube::KubeConfig& config, std::stop_token stop) {
  constexpr const char* kGroupVersion = "/apis/scheduling.k8s.io/v1beta1";
  kube::KubeClient client(config, std::chrono::seconds(10));
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
    sleepUntilStopped(stop, std::chrono::seconds(10));
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

void ClusterSync::rememberDemand(const PodUpdate& pod) {
  if (options_.podsFromApi == nullptr || !pod.record) return;
  // Only what a bind can ask about: pods that want Neuron and are not bound yet.
  const PodRecord& record = *pod.record;
  if (!record.demand.wantsNeuron() || !record.nodeName.empty()) return;
  options_.podsFromApi->remember(record.demand);
}

std::string ClusterSync::metricsText() const {
  metrics::PrometheusText out;
  out.family("torus_extender_pod_objects_received_total", "counter",
             "Pod objects the pod informer delivered (list items and events but deletions).");
  out.sample("torus_extender_pod_objects_received_total", {},
             static_cast<double>(podObjectsReceived_.load()));
  out.family("torus_extender_pod_objects_read_total", "counter",
             "Pod objects read (parsed) in this process: one per object received, shared by the "
             "mirror, bind admission, the preemptor and the pod cache.");
  out.sample("torus_extender_pod_objects_read_total", {}, static_cast<double>(podObjectsRead()));
  return out.text() + (preemptor_ ? preemptor_->prometheusText() : "");
}

void ClusterSync::expireLoop(std::stop_token stop) {
  const auto period =
      std::min<std::chrono::milliseconds>(options_.assumeTtl / 4, std::chrono::seconds(5));
  while (!sleepUntilStopped(stop, period)) {
    for (const Allocation& expired :
         state_.expireAssumptions(std::chrono::steady_clock::now(), options_.assumeTtl)) {
      TORUS_LOG(Warn, Extender, "bind never showed up on the pod; cores given back",
                {"pod", expired.podKey}, {"node", expired.node},
                {"ids", expired.ids.toRangeString()});
    }
  }
}

}  // namespace torus::extender
