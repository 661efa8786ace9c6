#include "common/kube/object_fields.h"

#include <nlohmann/json.hpp>

namespace torus::kube {

using nlohmann::json;

const json& fieldAt(const json& object, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* here = &object;
  for (const char* key : path) {
    if (!here->is_object()) return kNull;
    const auto found = here->find(key);
    if (found == here->end()) return kNull;
    here = &*found;
  }
  return *here;
}

std::string stringAt(const json& object, std::initializer_list<const char*> path) {
  const json& value = fieldAt(object, path);
  return value.is_string() ? value.get<std::string>() : "";
}

std::string stringField(const json& object, const char* outer, const char* inner) {
  return stringAt(object, {outer, inner});
}

std::string annotationOf(const json& object, const char* key) {
  return stringAt(object, {"metadata", "annotations", key});
}

}  // namespace torus::kube
