#include "common/base/utc_time.h"

#include <cstdio>
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

std::string utcNowRfc3339Micro() {
  const auto now = std::chrono::system_clock::now();
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          now - std::chrono::floor<std::chrono::seconds>(now))
                          .count();
  std::string text = utcRfc3339(now);
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%06d", static_cast<int>(micros));
  text.insert(text.size() - 1, fraction);  // before the "Z"
  return text;
}

std::optional<std::chrono::system_clock::time_point> parseUtcRfc3339(std::string_view text) {
  if (text.size() != 20) return std::nullopt;
  const std::string copy(text);
  std::tm utc{};
  char zone = 0;
  int consumed = 0;
  if (std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c%n", &utc.tm_year, &utc.tm_mon,
                  &utc.tm_mday, &utc.tm_hour, &utc.tm_min, &utc.tm_sec, &zone, &consumed) != 7 ||
      zone != 'Z' || consumed != 20 || utc.tm_mon < 1 || utc.tm_mon > 12 || utc.tm_mday < 1 ||
      utc.tm_mday > 31 || utc.tm_hour > 23 || utc.tm_min > 59 || utc.tm_sec > 60) {
    return std::nullopt;
  }
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  return std::chrono::system_clock::from_time_t(timegm(&utc));
}

}  // namespace torus
