#include "common/contracts/kubelet_view.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/contracts/neuron_names.h"
#include "common/kube/object_fields.h"

namespace torus::contracts {

bool hasRestartingTaint(const nlohmann::json& node) {
  const nlohmann::json& taints = kube::arrayAt(node, {"spec", "taints"});
  return std::any_of(taints.begin(), taints.end(), [](const nlohmann::json& taint) {
    return kube::stringAt(taint, {"key"}) == kRestartingTaintKey;
  });
}

std::string renderKubeletUnavailable(const KubeletUnavailable& unhealthy) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [resource, ids] : unhealthy)
    object[resource] = ids.toRangeString();
  return object.dump();
}

Result<KubeletUnavailable> parseKubeletUnavailable(std::string_view text) {
  const auto invalid = [&](const std::string& why) {
    return makeError(ErrorCode::kInvalidArgument,
                     std::string("annotation ") + kKubeletUnavailableAnnotation + "=" +
                         quoteJsonString(clipForMessage(text)) + ": " + why);
  };
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, false);
  if (!object.is_object()) return invalid("not a JSON object");
  KubeletUnavailable unhealthy;
  for (const auto& [resource, value] : object.items()) {
    if (std::ranges::find(kResourceNames, resource) == kResourceNames.end()) {
      return invalid("\"" + resource + "\" is not a Neuron resource");
    }
    if (!value.is_string()) return invalid("the ids of " + resource + " are not a string");
    auto ids = topology::CoreSet::parse(value.get<std::string>());
    if (!ids) return invalid(resource + ": " + ids.error().message);
    unhealthy[resource] = *ids;
  }
  return unhealthy;
}

}  // namespace torus::contracts
