#include "node-runtime/discovery/lnc_config.h"

#include <system_error>

#include "common/base/file_io.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/contracts/neuron_names.h"

namespace torus::discovery {

Result<int> parseLncConfigFile(std::string_view text) {
  // The file sets the same variable the Neuron runtime reads from a container's environment.
  constexpr std::string_view kKey = contracts::kLogicalNcConfigEnv;
  std::optional<int> found;
  for (std::string_view line : splitAndTrim(text, '\n')) {
    if (line.empty() || line.front() == '#') continue;
    if (line.starts_with("export ")) line = trim(line.substr(7));
    const std::size_t equals = line.find('=');
    if (equals == std::string_view::npos || trim(line.substr(0, equals)) != kKey) {
      return makeError(ErrorCode::kInvalidArgument,
                       "expected a line NEURON_LOGICAL_NC_CONFIG=1|2, got " +
                           quoteJsonString(clipForMessage(line)));
    }
    std::string_view value = trim(line.substr(equals + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    auto lnc = parseInt(value, 1, 2);
    if (!lnc) {
      return makeError(ErrorCode::kInvalidArgument,
                       "NEURON_LOGICAL_NC_CONFIG: expected 1 or 2, got " +
                           quoteJsonString(clipForMessage(value)));
    }
    found = *lnc;
  }
  if (!found) {
    return makeError(ErrorCode::kInvalidArgument, "no NEURON_LOGICAL_NC_CONFIG line");
  }
  return *found;
}

Result<LncChoice> chooseLnc(const DiscoveryRoots& roots, const topology::InstanceType* type,
                            std::optional<int> override) {
  const std::string typeName = type != nullptr ? std::string(type->name) : "an unknown type";
  const int fallback = type != nullptr ? type->defaultLnc : 1;
  if (override) {
    if (type != nullptr && !topology::supportsLnc(*type, *override)) {
      return makeError(ErrorCode::kInvalidArgument,
                       "LNC " + std::to_string(*override) + " is not supported on " + typeName +
                           " (supported: 1" + (type->maxLnc >= 2 ? ", 2)" : ")"));
    }
    return LncChoice{*override, "override", ""};
  }
  LncChoice choice{fallback, "default for " + typeName, ""};
  const auto path = roots.lncConfigFile();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return choice;
  auto text = readSmallFile(path, 4096);
  if (!text) {
    choice.warning = text.error().message + "; using LNC " + std::to_string(fallback);
    return choice;
  }
  auto lnc = parseLncConfigFile(*text);
  if (!lnc) {
    choice.warning =
        path.string() + ": " + lnc.error().message + "; using LNC " + std::to_string(fallback);
    return choice;
  }
  if (type != nullptr && !topology::supportsLnc(*type, *lnc)) {
    choice.warning = path.string() + ": LNC " + std::to_string(*lnc) + " is not supported on " +
                     typeName + "; using LNC " + std::to_string(fallback);
    return choice;
  }
  return LncChoice{*lnc, "file " + path.string(), ""};
}

}  // namespace torus::discovery
