#include "kubectl-neuron/cluster_snapshot.h"

#include <nlohmann/json.hpp>

#include "scheduler-extender/kube/cluster_mirror.h"

namespace torus::kubectl_neuron {
namespace {

using nlohmann::json;

Result<std::vector<std::shared_ptr<const json>>> listItems(kube::KubeClient& client,
                                                           const std::string& path) {
  auto list = client.get(path);
  if (!list) return std::move(list).error();
  std::vector<std::shared_ptr<const json>> items;
  if (const auto found = list->find("items"); found != list->end() && found->is_array()) {
    for (json& item : *found)
      items.push_back(std::make_shared<const json>(std::move(item)));
  }
  return items;
}

}  // namespace

Result<std::unique_ptr<ClusterSnapshot>> loadClusterSnapshot(kube::KubeClient& client) {
  auto nodes = listItems(client, "/api/v1/nodes");
  if (!nodes) return std::move(nodes).error().withContext("listing nodes");
  auto pods = listItems(client, "/api/v1/pods");
  if (!pods) return std::move(pods).error().withContext("listing pods");
  auto snapshot = std::make_unique<ClusterSnapshot>();
  extender::ClusterMirror mirror(snapshot->state);
  mirror.applyNodeList(*nodes);
  mirror.applyPodList(*pods);
  for (const auto& pod : *pods) {
    auto record = extender::parsePodRecord(*pod);
    if (record && record->demand.wantsNeuron()) snapshot->neuronPods.push_back(std::move(*record));
  }
  return snapshot;
}

}  // namespace torus::kubectl_neuron
