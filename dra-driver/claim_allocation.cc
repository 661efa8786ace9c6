#include "dra-driver/claim_allocation.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/contracts/container_env.h"

namespace torus::dra {
namespace {

using nlohmann::json;

std::string joinModes(const std::vector<int>& modes) {
  std::vector<std::string> names;
  for (const int mode : modes)
    names.push_back(std::to_string(mode));
  return joinStrings(names, ",");
}

const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto found = object.find(key);
  return found == object.end() ? nullptr : &*found;
}

std::string stringMember(const json& object, const char* key) {
  const json* value = member(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// A config applies to a result when it names no requests, or names the result's request or the
// parent of a firstAvailable subrequest ("gpu" covers "gpu/large").
bool configCovers(const json& config, const std::vector<std::string>& requests) {
  const json* names = member(config, "requests");
  if (names == nullptr || !names->is_array() || names->empty()) return true;
  for (const json& name : *names) {
    if (!name.is_string()) continue;
    const std::string wanted = name.get<std::string>();
    for (const std::string& request : requests) {
      if (request == wanted || request.starts_with(wanted + "/")) return true;
    }
  }
  return false;
}

Result<void> applyConfigs(const json& allocation, const ResolvedClaim& claim,
                          NeuronSettings& settings) {
  const json* devices = member(allocation, "devices");
  const json* configs = devices != nullptr ? member(*devices, "config") : nullptr;
  if (configs == nullptr) return okResult();
  if (!configs->is_array()) {
    return makeError(ErrorCode::kInvalidArgument, "status.allocation.devices.config is not a list");
  }
  std::vector<std::string> ourRequests;
  for (const AllocatedDevice& device : claim.devices) {
    ourRequests.insert(ourRequests.end(), device.requests.begin(), device.requests.end());
  }
  // Class configs first, claim configs after, each in order: the later one wins.
  for (const char* source : {"FromClass", "FromClaim"}) {
    for (std::size_t i = 0; i < configs->size(); ++i) {
      const json& config = (*configs)[i];
      if (stringMember(config, "source") != source) continue;
      const json* opaque = member(config, "opaque");
      if (opaque == nullptr || stringMember(*opaque, "driver") != kDriverName) continue;
      if (!configCovers(config, ourRequests)) continue;
      const json* parameters = member(*opaque, "parameters");
      if (parameters == nullptr) continue;
      TORUS_RETURN_IF_ERROR(
          applyOpaqueParameters(*parameters, settings),
          "status.allocation.devices.config[" + std::to_string(i) + "] (" +
              (std::string(source) == "FromClass" ? "from the DeviceClass" : "from the claim") +
              ")");
    }
  }
  return okResult();
}

}  // namespace

topology::DeviceSet chipsOfDevice(const NamedDevice& device, const topology::Node& node) {
  switch (device.kind) {
    case NamedDevice::Kind::kChip: {
      topology::DeviceSet chip;
      chip.insert(device.index);
      return chip;
    }
    case NamedDevice::Kind::kCore: {
      topology::DeviceSet chip;
      chip.insert(node.deviceOfCore(device.index));
      return chip;
    }
    case NamedDevice::Kind::kNode:
      return node.allDevices();
  }
  return {};
}

Result<ResolvedClaim> resolveClaim(const json& claim, const ClaimRef& ref, const std::string& pool,
                                   const topology::Node& node) {
  const std::string where = "claim " + ref.nameSpace + "/" + ref.name;
  const json* metadata = member(claim, "metadata");
  if (metadata == nullptr || stringMember(*metadata, "uid") != ref.uid) {
    return makeError(ErrorCode::kNotFound, where + ": the API has no claim with uid " + ref.uid +
                                               " (deleted and re-created?)");
  }
  const json* status = member(claim, "status");
  const json* allocation = status != nullptr ? member(*status, "allocation") : nullptr;
  const json* devices = allocation != nullptr ? member(*allocation, "devices") : nullptr;
  const json* results = devices != nullptr ? member(*devices, "results") : nullptr;
  if (results == nullptr || !results->is_array()) {
    return makeError(ErrorCode::kFailedPrecondition, where + ": not allocated");
  }

  ResolvedClaim resolved;
  resolved.ref = ref;
  resolved.pool = pool;
  for (std::size_t i = 0; i < results->size(); ++i) {
    const json& result = (*results)[i];
    if (stringMember(result, "driver") != kDriverName) continue;
    const std::string at = where + ": status.allocation.devices.results[" + std::to_string(i) + "]";
    if (stringMember(result, "pool") != pool) {
      return makeError(ErrorCode::kFailedPrecondition,
                       at + " is from pool \"" + stringMember(result, "pool") +
                           "\", not this node's (\"" + pool + "\")");
    }
    const std::string name = stringMember(result, "device");
    const std::optional<NamedDevice> what = parseDeviceName(name);
    const bool known =
        what &&
        ((what->kind == NamedDevice::Kind::kChip && what->index < node.deviceCount()) ||
         (what->kind == NamedDevice::Kind::kCore && what->index < node.logicalCoreCount()) ||
         (what->kind == NamedDevice::Kind::kNode && node.deviceCount() > 0));
    if (!known) {
      return makeError(ErrorCode::kInvalidArgument,
                       at + ": device \"" + name + "\" is not one this node publishes");
    }
    const std::string request = stringMember(result, "request");
    const json* admin = member(result, "adminAccess");
    const bool adminAccess = admin != nullptr && admin->is_boolean() && admin->get<bool>();
    auto existing =
        std::find_if(resolved.devices.begin(), resolved.devices.end(),
                     [&](const AllocatedDevice& device) { return device.name == name; });
    if (existing != resolved.devices.end()) {
      existing->requests.push_back(request);  // one device, two requests (admin access)
      existing->adminAccess = existing->adminAccess && adminAccess;
      continue;
    }
    resolved.devices.push_back({{request}, name, *what, adminAccess});
  }
  if (resolved.devices.empty()) {
    return makeError(ErrorCode::kFailedPrecondition,
                     where + ": no device of " + std::string(kDriverName) + " is allocated to it");
  }

  // What the containers see (every device) and what the claim owns (devices without admin
  // access): only owned chips and cores are exclusive and reset after the claim.
  resolved.wholeChips = true;
  topology::DeviceSet seenChips;
  topology::CoreSet seenCores;
  for (const AllocatedDevice& device : resolved.devices) {
    const topology::DeviceSet chips = chipsOfDevice(device.what, node);
    topology::CoreSet cores;
    if (device.what.kind == NamedDevice::Kind::kCore) {
      resolved.wholeChips = false;
      cores.insert(device.what.index);
    } else {
      cores = node.coresOfDevices(chips);
    }
    seenChips |= chips;
    seenCores |= cores;
    if (!device.adminAccess) {
      resolved.chips |= chips;
      resolved.cores |= cores;
    }
  }

  NeuronSettings settings;
  TORUS_RETURN_IF_ERROR(applyConfigs(*allocation, resolved, settings), where);
  resolved.ultraServerMode = settings.ultraServerMode;
  resolved.lnc = settings.logicalNeuronCore.value_or(node.lnc);
  if (resolved.lnc != node.lnc) {
    if (!resolved.wholeChips) {
      return makeError(ErrorCode::kInvalidArgument,
                       where + ": NeuronConfig.logicalNeuronCore " + std::to_string(resolved.lnc) +
                           " applies to whole chips only; this claim holds single cores, which "
                           "are numbered at the node's LNC " +
                           std::to_string(node.lnc));
    }
    if (node.catalog != nullptr && !topology::supportsLnc(*node.catalog, resolved.lnc)) {
      return makeError(ErrorCode::kInvalidArgument,
                       where + ": NeuronConfig.logicalNeuronCore " + std::to_string(resolved.lnc) +
                           " is not supported on " + node.instanceType);
    }
    if (node.physicalCoresPerDevice % resolved.lnc != 0) {
      return makeError(ErrorCode::kInvalidArgument,
                       where + ": NeuronConfig.logicalNeuronCore " + std::to_string(resolved.lnc) +
                           " does not divide the " + std::to_string(node.physicalCoresPerDevice) +
                           " physical cores of a chip");
    }
  }
  if (resolved.ultraServerMode && !node.ultraServer) {
    return makeError(ErrorCode::kInvalidArgument,
                     where + ": UltraServerConfig.ultraserverMode is set but " + node.instanceType +
                         " is not an UltraServer node");
  }
  if (resolved.ultraServerMode && !node.ultraServer->supportedModes.empty()) {
    // The driver lists the modes its election formed; a 4-node mode after a 2-node (lame duck)
    // election would hand the runtime ids that name no UltraServer.
    const auto& modes = node.ultraServer->supportedModes;
    const int code = contracts::ultraServerModeCode(*resolved.ultraServerMode, *node.ultraServer);
    if (std::find(modes.begin(), modes.end(), code) == modes.end()) {
      return makeError(ErrorCode::kFailedPrecondition,
                       where + ": UltraServerConfig.ultraserverMode " +
                           std::to_string(*resolved.ultraServerMode) +
                           " is not offered by this node's UltraServer (driver modes " +
                           joinModes(modes) + ")");
    }
  }
  if (resolved.lnc == node.lnc) {
    resolved.visibleCores = seenCores.ids();
  } else {
    const int perChip = node.physicalCoresPerDevice / resolved.lnc;
    for (const int chip : seenChips.ids()) {
      for (int k = 0; k < perChip; ++k)
        resolved.visibleCores.push_back(chip * perChip + k);
    }
  }
  return resolved;
}

}  // namespace torus::dra
