// Non-throwing reads of Kubernetes objects as the API returns them (JSON): a field that is
// missing or of another type reads as empty, never as an exception in a watch thread.
#pragma once

#include <initializer_list>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace torus::kube {

// The value at `path` through nested objects; null when a step is missing or not an object.
const nlohmann::json& fieldAt(const nlohmann::json& object,
                              std::initializer_list<const char*> path);
// The same when it is a string; "" otherwise.
std::string stringAt(const nlohmann::json& object, std::initializer_list<const char*> path);
// The same when it is an array; an empty array otherwise (so it can always be iterated).
const nlohmann::json& arrayAt(const nlohmann::json& object,
                              std::initializer_list<const char*> path);
// The string members of the object at `path` (others skipped); empty when it is not an object.
std::map<std::string, std::string> stringMapAt(const nlohmann::json& object,
                                               std::initializer_list<const char*> path);
// object[outer][inner] when both are there and the value is a string; "" otherwise.
std::string stringField(const nlohmann::json& object, const char* outer, const char* inner);
// metadata.annotations[key] when it is a string; "" otherwise.
std::string annotationOf(const nlohmann::json& object, const char* key);
// "namespace/name" of the object's metadata, or "name" when it has no namespace (cluster-scoped),
// as client-go's MetaNamespaceKeyFunc keys its caches and as logs name an object.
std::string keyOf(const nlohmann::json& object);
// The owner reference that is the object's controller (controller: true); null when it has none.
const nlohmann::json& controllerOf(const nlohmann::json& object);

}  // namespace torus::kube
