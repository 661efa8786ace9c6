#include "node-runtime/agent/kube/restarting_taint.h"

#include <nlohmann/json.hpp>

#include "common/contracts/kubelet_view.h"
#include "common/kube/object_fields.h"

namespace torus::agent {

Result<bool> setRestartingTaint(kube::KubeClient& client, const std::string& node, bool present) {
  const std::string path = "/api/v1/nodes/" + node;
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    auto object = client.get(path);
    if (!object) return std::move(object).error().withContext("reading node " + node);
    nlohmann::json taints = nlohmann::json::array();
    bool had = false;
    if (const nlohmann::json& current = kube::fieldAt(*object, {"spec", "taints"});
        current.is_array()) {
      for (const nlohmann::json& taint : current) {
        if (kube::stringAt(taint, {"key"}) == contracts::kRestartingTaintKey) {
          had = true;
        } else {
          taints.push_back(taint);
        }
      }
    }
    if (had == present) return false;
    if (present) {
      taints.push_back(
          {{"key", contracts::kRestartingTaintKey}, {"effect", contracts::kRestartingTaintEffect}});
    }
    const nlohmann::json patch = {
        {"metadata",
         {{"resourceVersion", kube::stringAt(*object, {"metadata", "resourceVersion"})}}},
        {"spec", {{"taints", taints.empty() ? nlohmann::json(nullptr) : taints}}}};
    auto patched = client.mergePatch(path, patch);
    if (patched) return true;
    if (patched.error().code != ErrorCode::kAborted || attempt == kAttempts) {
      return std::move(patched).error().withContext(
          std::string(present ? "tainting" : "untainting") + " node " + node);
    }
  }
}

}  // namespace torus::agent
