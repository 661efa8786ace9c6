#include "common/config/log_settings.h"

namespace torus::config {

void addLogSettings(SettingTable& table, log::Settings* settings) {
  table.add({"log-level", "TORUS_LOG_LEVEL", "logLevel", "LEVEL", "info",
             "lowest level logged: debug, info, warn, error",
             [settings](std::string_view value) -> Result<void> {
               auto level = log::parseLevel(value);
               if (!level) return std::move(level).error();
               settings->level = *level;
               return okResult();
             }});
  table.add({"log-debug", "TORUS_LOG_DEBUG", "logDebug", "COMPONENTS", "",
             "components logged at debug whatever --log-level says, e.g. discovery,plugin",
             [settings](std::string_view value) -> Result<void> {
               auto mask = log::parseComponentList(value);
               if (!mask) return std::move(mask).error();
               settings->debugComponents = *mask;
               return okResult();
             }});
  table.add({"log-format", "TORUS_LOG_FORMAT", "logFormat", "FORMAT", "text",
             "log line format: text or json", [settings](std::string_view value) -> Result<void> {
               auto format = log::parseFormat(value);
               if (!format) return std::move(format).error();
               settings->format = *format;
               return okResult();
             }});
}

}  // namespace torus::config
