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

const json& arrayAt(const json& object, std::initializer_list<const char*> path) {
  static const json kEmpty = json::array();
  const json& value = fieldAt(object, path);
  return value.is_array() ? value : kEmpty;
}

std::map<std::string, std::string> stringMapAt(const json& object,
                                               std::initializer_list<const char*> path) {
  std::map<std::string, std::string> strings;
  const json& value = fieldAt(object, path);
  if (!value.is_object()) return strings;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it->is_string()) strings[it.key()] = it->get<std::string>();
  }
  return strings;
}

std::string stringField(const json& object, const char* outer, const char* inner) {
  return stringAt(object, {outer, inner});
}

std::string annotationOf(const json& object, const char* key) {
  return stringAt(object, {"metadata", "annotations", key});
}

std::string keyOf(const json& object) {
  const std::string nameSpace = stringAt(object, {"metadata", "namespace"});
  const std::string name = stringAt(object, {"metadata", "name"});
  return nameSpace.empty() ? name : nameSpace + "/" + name;
}

const json& controllerOf(const json& object) {
  static const json kNone;
  for (const json& owner : arrayAt(object, {"metadata", "ownerReferences"})) {
    if (fieldAt(owner, {"controller"}) == json(true)) return owner;
  }
  return kNone;
}

}  // namespace torus::kube
