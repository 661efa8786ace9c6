#include "common/base/log.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "common/base/strings.h"

namespace torus::log {
namespace detail {
std::atomic<int> minimumLevel{static_cast<int>(Level::kInfo)};
std::atomic<ComponentMask> debugMask{0};
std::atomic<int> configuredLevel{static_cast<int>(Level::kInfo)};
}  // namespace detail

namespace {

constexpr std::array<std::string_view, static_cast<int>(Component::kCount)> kComponentNames = {
    "discovery", "plugin", "runtime",   "health", "extender", "kube", "config",      "coll",
    "ofi",       "tuning", "simulator", "agent",  "http",     "dra",  "ultraserver",
};

struct SinkState {
  std::mutex mutex;
  Format format = Format::kText;
  std::function<void(std::string_view)> testSink;
};

SinkState& sinkState() {
  static SinkState state;
  return state;
}

std::string timestampNow() {
  const auto now = std::chrono::system_clock::now();
  const auto seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis));
  return buffer;
}

bool needsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (const char c : value) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
      return true;
  }
  return false;
}

std::string formatText(Level level, Component component, std::string_view message,
                       std::initializer_list<Field> fields) {
  std::string line = timestampNow();
  line += ' ';
  line += levelName(level);
  line += ' ';
  line += componentName(component);
  line += ' ';
  line += quoteJsonString(message);
  for (const Field& field : fields) {
    line += ' ';
    line += field.key;
    line += '=';
    line += field.quoted && needsQuotes(field.value) ? quoteJsonString(field.value) : field.value;
  }
  return line;
}

std::string formatJson(Level level, Component component, std::string_view message,
                       std::initializer_list<Field> fields) {
  std::string line = "{\"time\":\"" + timestampNow() + "\",\"level\":\"";
  line += levelName(level);
  line += "\",\"component\":\"";
  line += componentName(component);
  line += "\",\"message\":";
  line += quoteJsonString(message);
  for (const Field& field : fields) {
    line += ',';
    line += quoteJsonString(field.key);
    line += ':';
    line += field.quoted ? quoteJsonString(field.value) : field.value;
  }
  line += '}';
  return line;
}

}  // namespace

std::string Field::formatDouble(double number) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", number);
  return buffer;
}

void configure(const Settings& settings) {
  const int level = static_cast<int>(settings.level);
  const int minimum = settings.debugComponents != 0 ? static_cast<int>(Level::kDebug) : level;
  detail::configuredLevel.store(level, std::memory_order_relaxed);
  detail::debugMask.store(settings.debugComponents, std::memory_order_relaxed);
  detail::minimumLevel.store(minimum, std::memory_order_relaxed);
  std::lock_guard lock(sinkState().mutex);
  sinkState().format = settings.format;
}

std::string_view levelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO";
    case Level::kWarn:
      return "WARN";
    case Level::kError:
      return "ERROR";
  }
  return "INFO";
}

std::string_view componentName(Component component) {
  const auto index = static_cast<std::size_t>(component);
  return index < kComponentNames.size() ? kComponentNames[index] : "unknown";
}

Result<Level> parseLevel(std::string_view text) {
  const std::string lower = toLower(trim(text));
  if (lower == "debug") return Level::kDebug;
  if (lower == "info") return Level::kInfo;
  if (lower == "warn" || lower == "warning") return Level::kWarn;
  if (lower == "error") return Level::kError;
  return makeError(
      ErrorCode::kInvalidArgument,
      "log level: expected one of debug, info, warn, error, got " + quoteJsonString(text));
}

Result<ComponentMask> parseComponentList(std::string_view text) {
  ComponentMask mask = 0;
  for (std::string_view item : splitAndTrim(text, ',')) {
    if (item.empty()) continue;
    if (item == "all") {
      mask = (ComponentMask{1} << static_cast<int>(Component::kCount)) - 1;
      continue;
    }
    bool found = false;
    for (std::size_t i = 0; i < kComponentNames.size(); ++i) {
      if (kComponentNames[i] == item) {
        mask |= ComponentMask{1} << i;
        found = true;
      }
    }
    if (!found) {
      return makeError(ErrorCode::kInvalidArgument,
                       "debug components: unknown component " + quoteJsonString(item) +
                           " (known: " + joinStrings(kComponentNames, ",") + ", all)");
    }
  }
  return mask;
}

Result<Format> parseFormat(std::string_view text) {
  const std::string lower = toLower(trim(text));
  if (lower == "text") return Format::kText;
  if (lower == "json") return Format::kJson;
  return makeError(ErrorCode::kInvalidArgument,
                   "log format: expected text or json, got " + quoteJsonString(text));
}

void write(Level level, Component component, std::string_view message,
           std::initializer_list<Field> fields) {
  SinkState& state = sinkState();
  std::lock_guard lock(state.mutex);
  std::string line = state.format == Format::kJson ? formatJson(level, component, message, fields)
                                                   : formatText(level, component, message, fields);
  if (state.testSink) {
    state.testSink(line);
    return;
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void setSinkForTesting(std::function<void(std::string_view line)> sink) {
  std::lock_guard lock(sinkState().mutex);
  sinkState().testSink = std::move(sink);
}

}  // namespace torus::log
