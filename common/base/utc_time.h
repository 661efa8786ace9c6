// Wall-clock time as Kubernetes writes it in objects (Event and condition timestamps).
#pragma once

#include <chrono>
#include <string>

namespace torus {

// "2026-11-22T05:31:07Z": RFC 3339 in UTC, whole seconds.
std::string utcRfc3339(std::chrono::system_clock::time_point at);
std::string utcNowRfc3339();

}  // namespace torus
