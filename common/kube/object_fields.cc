#include "common/kube/object_fields.h"

#include <nlohmann/json.hpp>

namespace torus::kube {

using nlohmann::json;

std::string stringField(const json& object, const char* outer, const char* inner) {
  if (!object.is_object()) return "";
  const auto first = object.find(outer);
  if (first == object.end() || !first->is_object()) return "";
  const auto second = first->find(inner);
  return second != first->end() && second->is_string() ? second->get<std::string>() : "";
}

std::string annotationOf(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  const auto annotations = metadata->find("annotations");
  if (annotations == metadata->end() || !annotations->is_object()) return "";
  const auto value = annotations->find(key);
  return value != annotations->end() && value->is_string() ? value->get<std::string>() : "";
}

}  // namespace torus::kube
