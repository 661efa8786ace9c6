#include "common/base/json_fields.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

namespace torus {
namespace {

using nlohmann::json;

bool isInt32(const json& value) {
  if (!value.is_number_integer()) return false;
  if (value.is_number_unsigned()) {
    return value.get<std::uint64_t>() <=
           static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());
  }
  const auto number = value.get<std::int64_t>();
  return number >= std::numeric_limits<std::int32_t>::min() &&
         number <= std::numeric_limits<std::int32_t>::max();
}

// What a message says the field should have been.
template <typename T>
const char* expected() {
  if constexpr (std::is_same_v<T, std::string>) {
    return "a string";
  } else if constexpr (std::is_same_v<T, bool>) {
    return "true or false";
  } else if constexpr (std::is_same_v<T, int>) {
    return "a number (a 32-bit integer)";
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return "a number (an integer)";
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return "a number (an integer >= 0)";
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    return "a list of 32-bit integers";
  } else {
    static_assert(std::is_same_v<T, std::vector<std::string>>);
    return "a list of strings";
  }
}

const json* find(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto found = object.find(key);
  return found == object.end() || found->is_null() ? nullptr : &*found;
}

template <typename T>
Result<T> read(const json& value, const std::string& field) {
  // Checked before converting: nlohmann converts a float to int without a range check
  // (undefined behaviour for 1e39).
  if (!hasShape<T>(value)) {
    // Appended piece by piece: GCC 12 at -O3 reports a bogus -Wrestrict for "literal" + string&&.
    std::string why = "expected ";
    why += expected<T>();
    why += ", got ";
    why += jsonTypeName(value);
    if (value.is_number()) {
      why += ' ';
      why += jsonText(value).substr(0, 32);
    }
    return fieldError(field, why);
  }
  return value.get<T>();
}

}  // namespace

std::string jsonText(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string jsonTypeName(const json& value) {
  return value.type_name();
}

Error fieldError(const std::string& field, const std::string& why) {
  return makeError(ErrorCode::kInvalidArgument, field + ": " + why);
}

std::string fieldPath(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

template <typename T>
bool hasShape(const json& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    return value.is_string();
  } else if constexpr (std::is_same_v<T, bool>) {
    return value.is_boolean();
  } else if constexpr (std::is_same_v<T, int>) {
    return isInt32(value);
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return value.is_number_integer() &&
           (!value.is_number_unsigned() ||
            value.get<std::uint64_t>() <=
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return value.is_number_unsigned();
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    return value.is_array() && std::all_of(value.begin(), value.end(), isInt32);
  } else {
    static_assert(std::is_same_v<T, std::vector<std::string>>);
    return value.is_array() && std::all_of(value.begin(), value.end(),
                                           [](const json& item) { return item.is_string(); });
  }
}

template <typename T>
Result<T> required(const json& object, std::string_view key, const std::string& path) {
  const json* value = find(object, key);
  if (value == nullptr) return fieldError(fieldPath(path, key), "missing");
  return read<T>(*value, fieldPath(path, key));
}

template <typename T>
Result<T> optional(const json& object, std::string_view key, const std::string& path, T fallback) {
  const json* value = find(object, key);
  if (value == nullptr) return fallback;
  return read<T>(*value, fieldPath(path, key));
}

#define TORUS_JSON_FIELD_INSTANTIATE(T)                                                 \
  template Result<T> required<T>(const json&, std::string_view, const std::string&);    \
  template Result<T> optional<T>(const json&, std::string_view, const std::string&, T); \
  template bool hasShape<T>(const json&);
TORUS_JSON_FIELD_TYPES(TORUS_JSON_FIELD_INSTANTIATE)
#undef TORUS_JSON_FIELD_INSTANTIATE

}  // namespace torus
