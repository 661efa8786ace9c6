// SettingTable: every setting of a binary declared once — flag, environment variable, YAML key,
// default, help — and from that one table: parsing, precedence, --help and docs/config.md.
//
// Precedence is flag > environment > file > default (NVIDIA's plugin documents the same order).
// A setting's target keeps its default until a source sets it, and the table remembers which
// source won, so the binary can log "lnc=1 (set by flag)" at startup. Unknown flags, unknown YAML
// keys, a missing or unknown `version:` and bad values are errors naming the key and the value.
// Nothing below main() reads flags or the environment; components get the filled struct.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace torus::config {

enum class Source { kDefault, kFile, kEnvironment, kFlag };
std::string_view sourceName(Source source);

struct Setting {
  std::string flag;         // "log-level" (used as --log-level)
  std::string env;          // "TORUS_LOG_LEVEL"; empty when not settable from the environment
  std::string yamlKey;      // "logLevel"; empty when not settable from the config file
  std::string valueName;    // "LEVEL" in --help; empty for a switch
  std::string defaultText;  // shown in --help and docs
  std::string help;
  // Parses and stores one value; the error says what was expected.
  std::function<Result<void>(std::string_view value)> apply;
  bool repeatable = false;  // every occurrence of the flag applies (lists of faults, ...)
  bool isSwitch() const { return valueName.empty(); }
};

struct Effective {
  std::string flag;
  std::string value;  // as given, for the startup log
  Source source;
};

using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvironmentLookup processEnvironment();

class SettingTable {
 public:
  explicit SettingTable(std::string program) : program_(std::move(program)) {}

  void add(Setting setting);
  void addString(std::string flag, std::string env, std::string yamlKey, std::string valueName,
                 std::string help, std::string* target);
  void addInt(std::string flag, std::string env, std::string yamlKey, std::string valueName,
              std::string help, int min, int max, int* target);
  void addOptionalInt(std::string flag, std::string env, std::string yamlKey, std::string valueName,
                      std::string help, int min, int max, std::optional<int>* target);
  void addSwitch(std::string flag, std::string env, std::string yamlKey, std::string help,
                 bool* target);
  void addDurationMillis(std::string flag, std::string env, std::string yamlKey, std::string help,
                         std::int64_t* target);

  struct Outcome {
    bool helpRequested = false;
    std::vector<std::string> positional;  // subcommands and their arguments
  };
  // `configFlag` names the setting that holds the YAML file path ("config"); empty = no file.
  Result<Outcome> parse(const std::vector<std::string>& args, const EnvironmentLookup& environment,
                        std::string_view configFlag = "config");

  std::string helpText(std::string_view usage, std::string_view description) const;
  // A Markdown table of every setting, for docs/config.md.
  std::string markdownReference() const;
  // Settings whose value came from somewhere other than the default.
  const std::vector<Effective>& effective() const { return effective_; }

 private:
  const Setting* findFlag(std::string_view flag) const;
  Result<void> applyFrom(const Setting& setting, std::string_view value, Source source);
  Result<void> applyFile(const std::string& path);

  std::string program_;
  std::vector<Setting> settings_;
  std::vector<Effective> effective_;
};

}  // namespace torus::config
