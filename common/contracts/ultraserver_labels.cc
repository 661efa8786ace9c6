#include "common/contracts/ultraserver_labels.h"

#include <array>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/base/parse.h"
#include "common/base/strings.h"

namespace torus::contracts {
namespace {

using nlohmann::json;

// The driver's ultraserver_mode codes and the names the label gives them (label values cannot
// hold ',', so the modes are joined with '_').
constexpr std::array<std::pair<int, std::string_view>, 4> kModeNames = {
    {{1, "X4"}, {2, "X2H"}, {3, "X2V"}, {4, "X1"}}};

std::string modeName(int mode) {
  for (const auto& [code, name] : kModeNames) {
    if (code == mode) return std::string(name);
  }
  return std::to_string(mode);
}

std::optional<int> modeCode(std::string_view name) {
  for (const auto& [code, known] : kModeNames) {
    if (known == name) return code;
  }
  return std::nullopt;
}

const json* labelIn(const json& labels, std::string_view key) {
  const auto found = labels.find(std::string(key));
  return found != labels.end() && found->is_string() ? &*found : nullptr;
}

}  // namespace

std::map<std::string, std::string> labelsOf(const topology::UltraServerPosition& position) {
  std::map<std::string, std::string> labels;
  std::string modes;
  for (const int mode : position.supportedModes) {
    if (!modes.empty()) modes += '_';
    modes += modeName(mode);
  }
  if (!modes.empty()) labels[std::string(kUltraServerModeLabel)] = modes;
  if (!position.serverId2.empty())
    labels[std::string(kUltraServerPairIdLabel)] = position.serverId2;
  if (!position.serverId4.empty()) labels[std::string(kUltraServerIdLabel)] = position.serverId4;
  if (position.nodeId2 >= 0)
    labels[std::string(kUltraServerPairNodeIdLabel)] = std::to_string(position.nodeId2);
  if (position.nodeId4 >= 0)
    labels[std::string(kUltraServerNodeIdLabel)] = std::to_string(position.nodeId4);
  return labels;
}

std::optional<topology::UltraServerPosition> positionOf(const json& labels) {
  if (!labels.is_object()) return std::nullopt;
  topology::UltraServerPosition position;
  bool any = false;
  const auto text = [&](std::string_view key) -> std::string {
    const json* label = labelIn(labels, key);
    if (label == nullptr) return "";
    any = true;
    return label->get<std::string>();
  };
  const auto nodeId = [&](std::string_view key, int last) {
    const auto value = parseInt(text(key), 0, last);
    return value ? *value : -1;
  };
  position.serverId4 = text(kUltraServerIdLabel);
  position.serverId2 = text(kUltraServerPairIdLabel);
  position.nodeId4 = nodeId(kUltraServerNodeIdLabel, 3);
  position.nodeId2 = nodeId(kUltraServerPairNodeIdLabel, 1);
  const std::string modes = text(kUltraServerModeLabel);
  if (!modes.empty()) {
    for (const std::string_view name : splitAndTrim(modes, '_')) {
      if (auto code = modeCode(name)) position.supportedModes.push_back(*code);
    }
  }
  if (!any) return std::nullopt;
  return position;
}

}  // namespace torus::contracts
