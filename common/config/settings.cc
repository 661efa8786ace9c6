#include "common/config/settings.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include <yaml-cpp/yaml.h>

#include "common/base/check.h"
#include "common/base/file_io.h"
#include "common/base/parse.h"
#include "common/base/strings.h"

namespace torus::config {
namespace {

Error invalid(std::string message) {
  return makeError(ErrorCode::kInvalidArgument, std::move(message));
}

// YAML scalars map to the flag text; a sequence of scalars becomes a comma list.
Result<std::string> yamlValueText(const YAML::Node& node, const std::string& key) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) {
    std::vector<std::string> items;
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) return invalid("key " + key + ": list items must be plain values");
      items.push_back(item.Scalar());
    }
    return joinStrings(items, ",");
  }
  if (node.IsNull()) return invalid("key " + key + ": has no value");
  return invalid("key " + key + ": expected a value or a list of values, got a mapping");
}

}  // namespace

std::string_view sourceName(Source source) {
  switch (source) {
    case Source::kDefault:
      return "default";
    case Source::kFile:
      return "config file";
    case Source::kEnvironment:
      return "environment";
    case Source::kFlag:
      return "flag";
  }
  return "default";
}

EnvironmentLookup processEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

void SettingTable::add(Setting setting) {
  TORUS_CHECK(findFlag(setting.flag) == nullptr, "setting declared twice: " + setting.flag);
  TORUS_CHECK(static_cast<bool>(setting.apply), "setting without apply: " + setting.flag);
  settings_.push_back(std::move(setting));
}

void SettingTable::addString(std::string flag, std::string env, std::string yamlKey,
                             std::string valueName, std::string help, std::string* target) {
  std::string defaultText = *target;
  add({std::move(flag), std::move(env), std::move(yamlKey), std::move(valueName),
       std::move(defaultText), std::move(help), [target](std::string_view value) -> Result<void> {
         *target = std::string(value);
         return okResult();
       }});
}

void SettingTable::addInt(std::string flag, std::string env, std::string yamlKey,
                          std::string valueName, std::string help, int min, int max, int* target) {
  add({std::move(flag), std::move(env), std::move(yamlKey), std::move(valueName),
       std::to_string(*target), std::move(help),
       [target, min, max](std::string_view value) -> Result<void> {
         auto parsed = parseInt(value, min, max);
         if (!parsed) return std::move(parsed).error();
         *target = *parsed;
         return okResult();
       }});
}

void SettingTable::addOptionalInt(std::string flag, std::string env, std::string yamlKey,
                                  std::string valueName, std::string help, int min, int max,
                                  std::optional<int>* target) {
  add({std::move(flag), std::move(env), std::move(yamlKey), std::move(valueName),
       target->has_value() ? std::to_string(**target) : "", std::move(help),
       [target, min, max](std::string_view value) -> Result<void> {
         auto parsed = parseInt(value, min, max);
         if (!parsed) return std::move(parsed).error();
         *target = *parsed;
         return okResult();
       }});
}

void SettingTable::addSwitch(std::string flag, std::string env, std::string yamlKey,
                             std::string help, bool* target) {
  add({std::move(flag), std::move(env), std::move(yamlKey), "", *target ? "true" : "false",
       std::move(help), [target](std::string_view value) -> Result<void> {
         auto parsed = parseBool(value);
         if (!parsed) return std::move(parsed).error();
         *target = *parsed;
         return okResult();
       }});
}

void SettingTable::addDurationMillis(std::string flag, std::string env, std::string yamlKey,
                                     std::string help, std::int64_t* target) {
  add({std::move(flag), std::move(env), std::move(yamlKey), "DURATION",
       std::to_string(*target) + "ms", std::move(help),
       [target](std::string_view value) -> Result<void> {
         auto parsed = parseDurationMillis(value);
         if (!parsed) return std::move(parsed).error();
         *target = *parsed;
         return okResult();
       }});
}

const Setting* SettingTable::findFlag(std::string_view flag) const {
  for (const Setting& setting : settings_) {
    if (setting.flag == flag) return &setting;
  }
  return nullptr;
}

Result<void> SettingTable::applyFrom(const Setting& setting, std::string_view value,
                                     Source source) {
  auto applied = setting.apply(value);
  if (!applied) {
    std::string where;
    switch (source) {
      case Source::kFlag:
        where = "flag --" + setting.flag;
        break;
      case Source::kEnvironment:
        where = "environment variable " + setting.env;
        break;
      case Source::kFile:
        where = "config key " + setting.yamlKey;
        break;
      case Source::kDefault:
        where = setting.flag;
        break;
    }
    return std::move(applied).error().withContext(where);
  }
  std::erase_if(effective_, [&](const Effective& e) {
    return e.flag == setting.flag && !(setting.repeatable && e.source == source);
  });
  effective_.push_back({setting.flag, std::string(value), source});
  return okResult();
}

Result<void> SettingTable::applyFile(const std::string& path) {
  auto text = readSmallFile(path, 1024 * 1024);
  if (!text) return std::move(text).error().withContext("config file");
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& error) {
    return invalid("config file " + path + ": not valid YAML: " + error.what());
  }
  if (!root.IsMap()) return invalid("config file " + path + ": expected a mapping of settings");
  const YAML::Node version = root["version"];
  if (!version || !version.IsScalar()) {
    return invalid("config file " + path + ": missing \"version: v1\"");
  }
  if (version.Scalar() != "v1") {
    return invalid("config file " + path + ": unknown version " +
                   quoteJsonString(version.Scalar()) + " (supported: v1)");
  }
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>("");
    if (key == "version") continue;
    const auto match = std::find_if(settings_.begin(), settings_.end(), [&](const Setting& s) {
      return !s.yamlKey.empty() && s.yamlKey == key;
    });
    if (match == settings_.end()) {
      return invalid("config file " + path + ": unknown key " + quoteJsonString(key));
    }
    auto value = yamlValueText(entry.second, key);
    if (!value) return std::move(value).error().withContext("config file " + path);
    TORUS_RETURN_IF_ERROR(applyFrom(*match, *value, Source::kFile), "config file " + path);
  }
  return okResult();
}

Result<SettingTable::Outcome> SettingTable::parse(const std::vector<std::string>& args,
                                                  const EnvironmentLookup& environment,
                                                  std::string_view configFlag) {
  Outcome outcome;
  // Flags are collected first and applied last, so that they win over the file and environment.
  std::vector<std::pair<const Setting*, std::string>> flagValues;
  bool onlyPositional = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (onlyPositional || !arg.starts_with("-") || arg == "-") {
      outcome.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      onlyPositional = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      outcome.helpRequested = true;
      continue;
    }
    if (!arg.starts_with("--")) {
      return invalid("unknown flag " + arg + " (flags start with --; see --help)");
    }
    const std::size_t equals = arg.find('=');
    const std::string name = arg.substr(2, equals == std::string::npos ? arg.npos : equals - 2);
    const Setting* setting = findFlag(name);
    if (setting == nullptr) return invalid("unknown flag --" + name + " (see --help)");
    std::string value;
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else if (setting->isSwitch()) {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return invalid("flag --" + name + " needs a value (" + setting->valueName + ")");
    }
    if (!setting->repeatable) {
      std::erase_if(flagValues, [&](const auto& entry) { return entry.first == setting; });
    }
    flagValues.emplace_back(setting, std::move(value));
  }
  if (outcome.helpRequested) return outcome;

  std::string configPath;
  if (const Setting* config = configFlag.empty() ? nullptr : findFlag(configFlag)) {
    for (const auto& [setting, value] : flagValues) {
      if (setting == config) configPath = value;
    }
    if (configPath.empty() && !config->env.empty()) {
      configPath = environment(config->env).value_or("");
    }
  }
  if (!configPath.empty()) TORUS_RETURN_IF_ERROR(applyFile(configPath), "reading settings");
  for (const Setting& setting : settings_) {
    if (setting.env.empty()) continue;
    if (const auto value = environment(setting.env)) {
      TORUS_RETURN_IF_ERROR(applyFrom(setting, *value, Source::kEnvironment), "reading settings");
    }
  }
  for (const auto& [setting, value] : flagValues) {
    TORUS_RETURN_IF_ERROR(applyFrom(*setting, value, Source::kFlag), "reading settings");
  }
  return outcome;
}

std::string SettingTable::helpText(std::string_view usage, std::string_view description) const {
  std::string text =
      "Usage: " + std::string(usage) + "\n\n" + std::string(description) + "\n\nFlags:\n";
  for (const Setting& setting : settings_) {
    std::string left = "  --" + setting.flag;
    if (!setting.isSwitch()) left += "=" + setting.valueName;
    text += left;
    text += left.size() < 30 ? std::string(30 - left.size(), ' ') : "\n" + std::string(30, ' ');
    text += setting.help;
    std::vector<std::string> notes;
    if (!setting.defaultText.empty()) notes.push_back("default " + setting.defaultText);
    if (!setting.env.empty()) notes.push_back("env " + setting.env);
    if (!setting.yamlKey.empty()) notes.push_back("config " + setting.yamlKey);
    if (!notes.empty()) text += " [" + joinStrings(notes, "; ") + "]";
    text += '\n';
  }
  text += "  -h, --help                  show this help\n";
  text += "\nPrecedence: flag > environment > config file (YAML, version: v1) > default.\n";
  return text;
}

std::string SettingTable::markdownReference() const {
  std::string text = "| flag | environment | config key | default | meaning |\n";
  text += "|---|---|---|---|---|\n";
  // Markdown table cells cannot hold a bare '|' ("1|2"), so escape it.
  const auto escape = [](const std::string& value) {
    std::string escaped;
    for (const char c : value) {
      if (c == '|') escaped += '\\';
      escaped += c;
    }
    return escaped;
  };
  const auto cell = [&](const std::string& value) {
    return value.empty() ? std::string("—") : "`" + escape(value) + "`";
  };
  for (const Setting& setting : settings_) {
    std::string flag = "--" + setting.flag;
    if (!setting.isSwitch()) flag += "=" + setting.valueName;
    text += "| " + cell(flag) + " | " + cell(setting.env) + " | " + cell(setting.yamlKey) + " | " +
            cell(setting.defaultText) + " | " + escape(setting.help) + " |\n";
  }
  return text;
}

}  // namespace torus::config
