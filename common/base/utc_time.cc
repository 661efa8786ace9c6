#include "common/base/utc_time.h"

#include <ctime>

namespace torus {

std::string utcRfc3339(std::chrono::system_clock::time_point at) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(at);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string utcNowRfc3339() {
  return utcRfc3339(std::chrono::system_clock::now());
}

}  // namespace torus
