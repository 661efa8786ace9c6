#include "node-runtime/agent/kube/forget_nodes.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/base/log.h"
#include "common/contracts/kubelet_view.h"
#include "common/kube/kube_client.h"
#include "common/kube/kube_config.h"
#include "common/kube/object_fields.h"
#include "node-runtime/agent/kube/restarting_taint.h"
#include "node-runtime/agent/rules/node_metadata.h"

namespace torus::agent {
namespace {

using nlohmann::json;

constexpr const char* kCondition = "NeuronHealthy";

const json* metadataField(const json& node, const char* field) {
  const auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) return nullptr;
  const auto found = metadata->find(field);
  return found != metadata->end() && found->is_object() ? &*found : nullptr;
}

std::string nameOf(const json& node) {
  const auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) return "";
  return metadata->value("name", std::string());
}

Result<kube::KubeConfig> apiConfig(const std::string& kubeconfig) {
  if (!kubeconfig.empty()) return kube::loadKubeconfig(kubeconfig);
  return kube::inClusterConfig();
}

// One pass over every node; returns how many still needed a change (0: all clean).
Result<int> forgetPass(kube::KubeClient& client, int& failures) {
  auto list = client.get("/api/v1/nodes");
  if (!list) return std::move(list).error();
  const auto items = list->find("items");
  if (items == list->end() || !items->is_array()) return 0;
  int changed = 0;
  for (const json& node : *items) {
    const std::string name = nameOf(node);
    if (name.empty()) continue;
    if (const json patch = forgetMetadataPatch(node); !patch.is_null()) {
      ++changed;
      if (auto patched = client.mergePatch("/api/v1/nodes/" + name, patch); !patched) {
        ++failures;
        TORUS_LOG(Error, Agent, "cannot remove the agent's labels", {"node", name},
                  {"error", patched.error().message});
      } else {
        TORUS_LOG(Info, Agent, "removed the agent's labels and annotations", {"node", name});
      }
    }
    if (contracts::hasRestartingTaint(node)) {
      ++changed;
      if (auto removed = setRestartingTaint(client, name, false); !removed) {
        ++failures;
        TORUS_LOG(Error, Agent, "cannot remove the device plugin's restarting taint",
                  {"node", name}, {"error", removed.error().message});
      } else {
        TORUS_LOG(Info, Agent, "removed the device plugin's restarting taint", {"node", name});
      }
    }
    if (hasNeuronCondition(node)) {
      ++changed;
      const json patch = {
          {"status",
           {{"conditions", json::array({{{"type", kCondition}, {"$patch", "delete"}}})}}}};
      if (auto patched = client.strategicMergePatch("/api/v1/nodes/" + name + "/status", patch);
          !patched) {
        ++failures;
        TORUS_LOG(Error, Agent, "cannot remove the NeuronHealthy condition", {"node", name},
                  {"error", patched.error().message});
      } else {
        TORUS_LOG(Info, Agent, "removed the NeuronHealthy condition", {"node", name});
      }
    }
  }
  return changed;
}

}  // namespace

json forgetMetadataPatch(const json& node) {
  json patch;
  for (const auto& [field, owned] :
       {std::pair{"labels", &ownedLabel}, std::pair{"annotations", &ownedAnnotation}}) {
    const json* keys = metadataField(node, field);
    if (keys == nullptr) continue;
    for (const auto& [key, value] : keys->items()) {
      if ((*owned)(key)) patch["metadata"][field][key] = nullptr;
    }
  }
  return patch;
}

bool hasNeuronCondition(const json& node) {
  const auto status = node.find("status");
  if (status == node.end() || !status->is_object()) return false;
  const auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return false;
  for (const json& condition : *conditions) {
    if (condition.is_object() && condition.value("type", std::string()) == kCondition) return true;
  }
  return false;
}

int runForgetNodesCommand(const std::string& kubeconfig) {
  auto api = apiConfig(kubeconfig);
  if (!api) {
    std::fprintf(stderr, "neuron-node-agent forget-nodes: %s\n", api.error().message.c_str());
    return 2;
  }
  kube::KubeClient client(*api);
  // An agent still stopping can publish once more after a pass: repeat until a pass finds
  // nothing to remove, for at most about 30 s.
  int failures = 0;
  for (int pass = 1; pass <= 10; ++pass) {
    auto changed = forgetPass(client, failures);
    if (!changed) {
      std::fprintf(stderr, "neuron-node-agent forget-nodes: %s\n", changed.error().message.c_str());
      return 2;
    }
    if (*changed == 0 || failures > 0) break;
    std::this_thread::sleep_for(std::chrono::seconds(3));
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace torus::agent
