#include "common/config/command_line.h"

#include <cstdio>

#include "common/base/log.h"
#include "common/base/version.h"

namespace torus::config {

std::optional<int> parseCommandLine(SettingTable& table, const CommandInfo& info, int argc,
                                    char** argv, std::vector<std::string>* positional) {
  bool version = false;
  table.addSwitch("version", "", "", "print the version and exit", &version);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string program(info.program);
  auto parsed = table.parse(args, processEnvironment(), info.configFlag);
  if (!parsed) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), parsed.error().message.c_str());
    return 2;
  }
  if (parsed->helpRequested) {
    std::fputs(table.helpText(info.usage, info.description).c_str(), stdout);
    return 0;
  }
  if (version) {
    std::printf("%s %.*s\n", program.c_str(), static_cast<int>(versionString().size()),
                versionString().data());
    return 0;
  }
  if (positional != nullptr) {
    *positional = parsed->positional;
  } else if (!parsed->positional.empty()) {
    std::fprintf(stderr, "%s: unexpected argument \"%s\" (see --help)\n", program.c_str(),
                 parsed->positional.front().c_str());
    return 2;
  }
  return std::nullopt;
}

void logEffectiveSettings(const SettingTable& table) {
  for (const auto& setting : table.effective()) {
    TORUS_LOG(Info, Config, "setting", {"name", setting.flag}, {"value", setting.value},
              {"source", sourceName(setting.source)});
  }
}

}  // namespace torus::config
