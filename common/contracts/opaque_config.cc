#include "common/contracts/opaque_config.h"

#include <string>

#include <nlohmann/json.hpp>

namespace torus::contracts {
namespace {

using nlohmann::json;

Result<int> smallInteger(const json& parameters, const char* kind, const char* field,
                         std::initializer_list<int> allowed) {
  const json& value = parameters.at(field);
  std::string choices;
  for (const int choice : allowed) {
    choices += (choices.empty() ? "" : ", ") + std::to_string(choice);
  }
  if (!value.is_number_integer()) {
    return makeError(ErrorCode::kInvalidArgument, std::string(kind) + "." + field +
                                                      " must be an integer (" + choices +
                                                      "), not " + value.dump());
  }
  const auto number = value.get<std::int64_t>();
  for (const int choice : allowed) {
    if (number == choice) return choice;
  }
  return makeError(ErrorCode::kInvalidArgument, std::string(kind) + "." + field + " is " +
                                                    std::to_string(number) +
                                                    "; it must be one of " + choices);
}

Result<void> rejectUnknownFields(const json& parameters, const char* kind,
                                 std::initializer_list<const char*> known) {
  for (const auto& [key, value] : parameters.items()) {
    if (key == "apiVersion" || key == "kind") continue;
    bool found = false;
    for (const char* name : known)
      found = found || key == name;
    if (!found) {
      std::string names;
      for (const char* name : known)
        names += (names.empty() ? "" : ", ") + std::string(name);
      return makeError(ErrorCode::kInvalidArgument,
                       std::string(kind) + " has no field \"" + key + "\" (it has: " + names + ")");
    }
  }
  return okResult();
}

}  // namespace

Result<void> applyOpaqueParameters(const json& parameters, NeuronSettings& settings) {
  if (!parameters.is_object()) {
    return makeError(ErrorCode::kInvalidArgument, "opaque parameters must be an object");
  }
  const auto apiVersion = parameters.find("apiVersion");
  if (apiVersion == parameters.end() || !apiVersion->is_string() ||
      apiVersion->get<std::string>() != kOpaqueConfigApiVersion) {
    return makeError(ErrorCode::kInvalidArgument,
                     "opaque parameters: apiVersion must be \"" +
                         std::string(kOpaqueConfigApiVersion) + "\", not " +
                         (apiVersion == parameters.end() ? "missing" : apiVersion->dump()));
  }
  const auto kind = parameters.find("kind");
  const std::string kindName =
      kind != parameters.end() && kind->is_string() ? kind->get<std::string>() : "";
  if (kindName == kNeuronConfigKind) {
    TORUS_RETURN_IF_ERROR(rejectUnknownFields(parameters, "NeuronConfig", {"logicalNeuronCore"}),
                          "opaque parameters");
    if (parameters.contains("logicalNeuronCore")) {
      auto lnc = smallInteger(parameters, "NeuronConfig", "logicalNeuronCore", {1, 2});
      if (!lnc) return std::move(lnc).error().withContext("opaque parameters");
      settings.logicalNeuronCore = *lnc;
    }
    return okResult();
  }
  if (kindName == kUltraServerConfigKind) {
    TORUS_RETURN_IF_ERROR(rejectUnknownFields(parameters, "UltraServerConfig", {"ultraserverMode"}),
                          "opaque parameters");
    if (parameters.contains("ultraserverMode")) {
      auto mode = smallInteger(parameters, "UltraServerConfig", "ultraserverMode", {1, 2, 4});
      if (!mode) return std::move(mode).error().withContext("opaque parameters");
      settings.ultraServerMode = *mode;
    }
    return okResult();
  }
  return makeError(ErrorCode::kInvalidArgument,
                   "opaque parameters: kind " +
                       (kind == parameters.end() ? std::string("is missing") : kind->dump()) +
                       " is not NeuronConfig or UltraServerConfig");
}

std::vector<json> opaqueParameters(const NeuronSettings& settings) {
  std::vector<json> parameters;
  const auto config = [](std::string_view kind) {
    return json{{"apiVersion", kOpaqueConfigApiVersion}, {"kind", kind}};
  };
  if (settings.ultraServerMode) {
    parameters.push_back(config(kUltraServerConfigKind));
    parameters.back()["ultraserverMode"] = *settings.ultraServerMode;
  }
  if (settings.logicalNeuronCore) {
    parameters.push_back(config(kNeuronConfigKind));
    parameters.back()["logicalNeuronCore"] = *settings.logicalNeuronCore;
  }
  return parameters;
}

}  // namespace torus::contracts
