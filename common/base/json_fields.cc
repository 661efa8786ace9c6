#include "common/base/json_fields.h"

#include <nlohmann/json.hpp>

namespace torus {

std::string jsonText(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string jsonTypeName(const nlohmann::json& value) {
  return value.type_name();
}

Error fieldError(const std::string& field, const std::string& why) {
  return makeError(ErrorCode::kInvalidArgument, field + ": " + why);
}

Result<std::string> readStringField(const nlohmann::json& object, std::string_view key,
                                    const std::string& path, Presence presence) {
  const std::string field = path + "." + std::string(key);
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (presence == Presence::kRequired) return fieldError(field, "missing");
    return std::string();
  }
  if (!it->is_string()) return fieldError(field, "expected a string, got " + jsonTypeName(*it));
  return it->get<std::string>();
}

}  // namespace torus
