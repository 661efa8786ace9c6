// Wall-clock time as Kubernetes writes it in objects (Event and condition timestamps).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace torus {

// "2026-11-22T05:31:07Z": RFC 3339 in UTC, whole seconds.
std::string utcRfc3339(std::chrono::system_clock::time_point at);
std::string utcNowRfc3339();
// "2026-11-22T05:31:07.123456Z": the same with microseconds (MicroTime: a Lease's times).
std::string utcNowRfc3339Micro();
// Reads what utcRfc3339 writes ("...Z", whole seconds); nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> parseUtcRfc3339(std::string_view text);

}  // namespace torus
