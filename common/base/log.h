// Structured logging: one line per event with time, level, component, message and key=value fields.
//
//   2026-11-22T10:15:03.120Z INFO discovery "discovered node" devices=16 lnc=2
//
// Owns: the fixed component list (like Envoy's ALL_LOGGER_IDS), level filtering, text and JSON
// formats. Does not own: where settings come from (each binary's config does that and calls
// configure()). The level is checked before any field is formatted, so disabled DEBUG lines cost
// one relaxed atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/base/result.h"

namespace torus::log {

enum class Level : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Keep in step with kComponentNames in log.cc.
enum class Component : int {
  kDiscovery,
  kPlugin,
  kRuntime,
  kHealth,
  kExtender,
  kKube,
  kConfig,
  kColl,
  kOfi,
  kTuning,
  kSimulator,
  kAgent,
  kHttp,
  kDra,
  kUltraServer,
  kCount,
};

enum class Format { kText, kJson };

using ComponentMask = std::uint32_t;

struct Settings {
  Level level = Level::kInfo;
  ComponentMask debugComponents = 0;  // components logged at DEBUG whatever `level` says
  Format format = Format::kText;
};

// A key=value pair. Numbers and booleans are written bare; strings are quoted when needed.
struct Field {
  Field(std::string_view name, std::string_view text) : key(name), value(text), quoted(true) {}
  Field(std::string_view name, const std::string& text) : key(name), value(text), quoted(true) {}
  Field(std::string_view name, const char* text) : key(name), value(text), quoted(true) {}
  Field(std::string_view name, bool flag) : key(name), value(flag ? "true" : "false") {}
  template <typename Number>
  requires std::is_arithmetic_v<Number> Field(std::string_view name, Number number)
      : key(name), value(formatNumber(number)) {}

  std::string_view key;
  std::string value;
  bool quoted = false;

 private:
  template <typename Number>
  static std::string formatNumber(Number number) {
    if constexpr (std::is_floating_point_v<Number>) {
      return formatDouble(static_cast<double>(number));
    } else {
      return std::to_string(number);
    }
  }
  static std::string formatDouble(double number);
};

void configure(const Settings& settings);

Result<Level> parseLevel(std::string_view text);
std::string_view levelName(Level level);
std::string_view componentName(Component component);
// "tuning,coll" -> mask; "all" selects every component; unknown names are an error.
Result<ComponentMask> parseComponentList(std::string_view text);
Result<Format> parseFormat(std::string_view text);

namespace detail {
extern std::atomic<int> minimumLevel;         // lowest level any component logs at
extern std::atomic<ComponentMask> debugMask;  // components forced to DEBUG
extern std::atomic<int> configuredLevel;
}  // namespace detail

inline bool enabled(Level level, Component component) {
  const int value = static_cast<int>(level);
  if (value < detail::minimumLevel.load(std::memory_order_relaxed)) return false;
  if (value >= detail::configuredLevel.load(std::memory_order_relaxed)) return true;
  return (detail::debugMask.load(std::memory_order_relaxed) >> static_cast<int>(component)) & 1U;
}

void write(Level level, Component component, std::string_view message,
           std::initializer_list<Field> fields = {});

// Tests capture log lines instead of writing to stderr; pass nullptr to restore stderr.
void setSinkForTesting(std::function<void(std::string_view line)> sink);

}  // namespace torus::log

// TORUS_LOG(Info, Discovery, "discovered node", {"devices", 16}, {"lnc", 2});
#define TORUS_LOG(level, component, message, ...)                                               \
  do {                                                                                          \
    if (::torus::log::enabled(::torus::log::Level::k##level,                                    \
                              ::torus::log::Component::k##component))                           \
      ::torus::log::write(::torus::log::Level::k##level, ::torus::log::Component::k##component, \
                          message, {__VA_ARGS__});                                              \
  } while (false)

// TORUS_LOG with the level chosen at run time, e.g. one rank of a group at Info and the others at
// Debug, so a 64-rank job says "ready" once:
// TORUS_LOG_AT(rank == 0 ? Level::kInfo : Level::kDebug, Coll, "communicator ready", ...);
#define TORUS_LOG_AT(levelValue, component, message, ...)                                   \
  do {                                                                                      \
    const ::torus::log::Level torus_log_level_ = (levelValue);                              \
    if (::torus::log::enabled(torus_log_level_, ::torus::log::Component::k##component))     \
      ::torus::log::write(torus_log_level_, ::torus::log::Component::k##component, message, \
                          {__VA_ARGS__});                                                   \
  } while (false)
