// Strict reads of JSON sent to us: a field that is missing or of the wrong type is an error that
// names it ("Pod.metadata.name: missing"), never an exception. The lenient reads of Kubernetes
// objects from a watch, where a missing field means "unset", are common/kube/object_fields.h.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"

namespace torus {

// Serialises compactly. Strings from a request may hold invalid UTF-8; they come out with U+FFFD
// in its place rather than as an exception.
std::string jsonText(const nlohmann::json& value);

// "string", "number", "object", ... as a message names them.
std::string jsonTypeName(const nlohmann::json& value);

// kInvalidArgument "field: why".
Error fieldError(const std::string& field, const std::string& why);

enum class Presence { kRequired, kOptional };

// object[key] as a string; "" when optional and missing or null. Errors name `path.key`.
Result<std::string> readStringField(const nlohmann::json& object, std::string_view key,
                                    const std::string& path, Presence presence);

}  // namespace torus
