// Strict reads of JSON sent to us or read back from disk: a field that is missing or of the wrong
// shape is an error that names it ("Pod.metadata.name: missing", "claim 0f6c.lnc: expected a
// number (an integer), got string"), never an exception and never a silent default. The lenient
// reads of Kubernetes objects from a watch, where a missing field means "unset", are
// common/kube/object_fields.h.
//
//   auto lnc = required<int>(entry, "lnc", where);          // Result<int>
//   auto ns = optional<std::string>(meta, "namespace", path, "default");
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// "path.key", or "key" when the path is empty: how messages name a field.
std::string fieldPath(const std::string& path, std::string_view key);

// object[key] as a T: an error when it is missing, null, or of another shape. T is one of
// std::string, bool, int (a 32-bit integer), std::int64_t, std::uint64_t, std::vector<int>,
// std::vector<std::string>. `object` that is not an object reads as one without the key.
template <typename T>
Result<T> required(const nlohmann::json& object, std::string_view key, const std::string& path);

// The same, but `fallback` when the key is missing or null.
template <typename T>
Result<T> optional(const nlohmann::json& object, std::string_view key, const std::string& path,
                   T fallback = T{});

// Whether `value` reads as a T (required<T>'s check, for array items and the like).
template <typename T>
bool hasShape(const nlohmann::json& value);

// The types above, for the explicit instantiations here and in json_fields.cc.
#define TORUS_JSON_FIELD_TYPES(X) \
  X(std::string)                  \
  X(bool)                         \
  X(int)                          \
  X(std::int64_t)                 \
  X(std::uint64_t)                \
  X(std::vector<int>)             \
  X(std::vector<std::string>)

#define TORUS_JSON_FIELD_EXTERN(T)                                               \
  extern template Result<T> required<T>(const nlohmann::json&, std::string_view, \
                                        const std::string&);                     \
  extern template Result<T> optional<T>(const nlohmann::json&, std::string_view, \
                                        const std::string&, T);                  \
  extern template bool hasShape<T>(const nlohmann::json&);
TORUS_JSON_FIELD_TYPES(TORUS_JSON_FIELD_EXTERN)
#undef TORUS_JSON_FIELD_EXTERN

}  // namespace torus
