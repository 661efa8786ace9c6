// The command-line handling every Torus binary shares: parse the settings, then answer --help
// and --version, and refuse stray arguments, with the same words and exit codes everywhere
// (0 after help/version, 2 for bad usage).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/settings.h"

namespace torus::config {

struct CommandInfo {
  std::string_view program;      // "neuron-ls"
  std::string_view usage;        // "neuron-ls [flags]"
  std::string_view description;  // for --help
  std::string_view configFlag;   // the setting naming a YAML file; empty when there is none
};

// Adds --version to `table`, parses argv, and handles help, version and stray arguments.
// Returns the exit code when the program should stop now, nullopt when it should run. With
// `positional`, arguments that are not flags (subcommands) are handed back instead of refused.
std::optional<int> parseCommandLine(SettingTable& table, const CommandInfo& info, int argc,
                                    char** argv, std::vector<std::string>* positional = nullptr);

// Logs every setting not at its default with where its value came from (after log::configure),
// so a program's log says how it was configured.
void logEffectiveSettings(const SettingTable& table);

}  // namespace torus::config
