#include "dra-driver/claim_allocation.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/contracts/container_env.h"
#include "common/kube/object_fields.h"

namespace torus::dra {
using contracts::NeuronSettings;

namespace {

using nlohmann::json;

std::string joinModes(const std::vector<int>& modes) {
  std::vector<std::string> names;
  for (const int mode : modes)
    names.push_back(std::to_string(mode));
  return joinStrings(names, ",");
}

// A config applies to a result when it names no requests, or names the result's request or the
// parent of a firstAvailable subrequest ("gpu" covers "gpu/large").
bool configCovers(const json& config, const std::vector<std::string>& requests) {
  const json& names = kube::arrayAt(config, {"requests"});
  if (names.empty()) return true;
  for (const json& name : names) {
    if (!name.is_string()) continue;
    const std::string wanted = name.get<std::string>();
    for (const std::string& request : requests) {
      if (request == wanted || request.starts_with(wanted + "/")) return true;
    }
  }
  return false;
}

// The settings of the configs that cover `requests` (one request's, or one device's names).
Result<void> applyConfigs(const json& allocation, const std::vector<std::string>& ourRequests,
                          NeuronSettings& settings) {
  const json& configs = kube::fieldAt(allocation, {"devices", "config"});
  if (configs.is_null()) return okResult();
  if (!configs.is_array()) {
    return makeError(ErrorCode::kInvalidArgument, "status.allocation.devices.config is not a list");
  }
  // Class configs first, claim configs after, each in order: the later one wins.
  for (const char* source : {"FromClass", "FromClaim"}) {
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const json& config = configs[i];
      if (kube::stringAt(config, {"source"}) != source) continue;
      if (kube::stringAt(config, {"opaque", "driver"}) != kDriverName) continue;
      if (!configCovers(config, ourRequests)) continue;
      const json& parameters = kube::fieldAt(config, {"opaque", "parameters"});
      if (parameters.is_null()) continue;
      TORUS_RETURN_IF_ERROR(
          contracts::applyOpaqueParameters(parameters, settings),
          "status.allocation.devices.config[" + std::to_string(i) + "] (" +
              (std::string(source) == "FromClass" ? "from the DeviceClass" : "from the claim") +
              ")");
    }
  }
  return okResult();
}

std::string describeSettings(const std::string& request, const NeuronSettings& settings,
                             int nodeLnc) {
  std::string text = "request \"" + request + "\": LNC " +
                     std::to_string(settings.logicalNeuronCore.value_or(nodeLnc)) +
                     (settings.logicalNeuronCore ? "" : " (the node's)");
  if (settings.ultraServerMode) {
    text += ", ultraserverMode " + std::to_string(*settings.ultraServerMode);
  }
  return text;
}

// One claim runs at one LNC and one UltraServer mode; a config naming some requests applies to
// those only, so the requests must come out the same.
Result<NeuronSettings> settingsPerRequest(const json& allocation, const ResolvedClaim& claim,
                                          int nodeLnc) {
  std::vector<std::pair<std::string, NeuronSettings>> perRequest;
  for (const AllocatedDevice& device : claim.devices) {
    for (const std::string& request : device.requests) {
      if (std::any_of(perRequest.begin(), perRequest.end(),
                      [&](const auto& seen) { return seen.first == request; })) {
        continue;
      }
      NeuronSettings settings;
      if (auto applied = applyConfigs(allocation, {request}, settings); !applied) {
        return std::move(applied).error();
      }
      perRequest.emplace_back(request, settings);
    }
  }
  const auto& [firstRequest, first] = perRequest.front();
  for (const auto& [request, settings] : perRequest) {
    if (settings.logicalNeuronCore.value_or(nodeLnc) != first.logicalNeuronCore.value_or(nodeLnc) ||
        settings.ultraServerMode != first.ultraServerMode) {
      return makeError(ErrorCode::kInvalidArgument,
                       "its requests are configured differently (" +
                           describeSettings(firstRequest, first, nodeLnc) + "; " +
                           describeSettings(request, settings, nodeLnc) +
                           "), but all chips of one claim run at one LNC and one UltraServer "
                           "mode: give each setting a claim of its own, or name every request in "
                           "the config");
    }
  }
  return first;
}

// The cores `devices` show a container, in the claim's LNC numbering (a claim at another LNC than
// the node's holds whole chips only, so its cores are renumbered chip by chip).
std::vector<int> visibleCoresOf(const std::vector<const AllocatedDevice*>& devices,
                                const topology::Node& node, int lnc) {
  topology::DeviceSet chips;
  topology::CoreSet cores;
  for (const AllocatedDevice* device : devices) {
    chips |= chipsOfDevice(device->what, node);
    cores |= coresOfDevice(device->what, node);
  }
  if (lnc == node.lnc) return cores.ids();
  std::vector<int> renumbered;
  const int perChip = node.physicalCoresPerDevice / lnc;
  for (const int chip : chips.ids()) {
    for (int k = 0; k < perChip; ++k)
      renumbered.push_back(chip * perChip + k);
  }
  return renumbered;
}

bool answersAny(const AllocatedDevice& device, const std::vector<std::string>& baseNames) {
  return std::any_of(device.requests.begin(), device.requests.end(), [&](const std::string& r) {
    return std::find(baseNames.begin(), baseNames.end(), baseRequestName(r)) != baseNames.end();
  });
}

std::string describeView(const ContainerView& view) {
  return view.container + (view.requests.empty()
                               ? " (the whole claim)"
                               : " (requests " + joinStrings(view.requests, ", ") + ")");
}

}  // namespace

std::vector<std::string> baseRequestsOf(const ResolvedClaim& claim) {
  std::vector<std::string> names;
  for (const AllocatedDevice& device : claim.devices) {
    for (const std::string& request : device.requests) {
      std::string base = baseRequestName(request);
      if (std::find(names.begin(), names.end(), base) == names.end()) {
        names.push_back(std::move(base));
      }
    }
  }
  return names;
}

Result<void> assignVisibleCores(ResolvedClaim& claim, const std::vector<ContainerView>& views,
                                const topology::Node& node) {
  const std::vector<ContainerView> wholeClaim{{"", {}}};
  const std::vector<ContainerView>& used = views.empty() ? wholeClaim : views;
  const std::size_t count = claim.devices.size();
  std::vector<std::vector<std::size_t>> groupOf(count);
  std::vector<const ContainerView*> firstViewOf(count, nullptr);
  for (const ContainerView& view : used) {
    std::vector<std::size_t> group;
    for (std::size_t i = 0; i < count; ++i) {
      if (view.requests.empty() || answersAny(claim.devices[i], view.requests)) group.push_back(i);
    }
    for (const std::size_t i : group) {
      if (firstViewOf[i] == nullptr) {
        groupOf[i] = group;
        firstViewOf[i] = &view;
      } else if (groupOf[i] != group) {
        return makeError(ErrorCode::kInvalidArgument,
                         "containers " + describeView(*firstViewOf[i]) + " and " +
                             describeView(view) + " both get device " + claim.devices[i].name +
                             " but with different other devices of the claim; its environment "
                             "can name one set of cores only: let containers name the whole "
                             "claim, or requests that no container combines differently");
      }
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (firstViewOf[i] != nullptr) continue;
    // Named by no container: the devices of its own requests.
    std::vector<std::string> own;
    for (const std::string& request : claim.devices[i].requests)
      own.push_back(baseRequestName(request));
    for (std::size_t j = 0; j < count; ++j) {
      if (answersAny(claim.devices[j], own)) groupOf[i].push_back(j);
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<const AllocatedDevice*> group;
    for (const std::size_t j : groupOf[i])
      group.push_back(&claim.devices[j]);
    claim.devices[i].visibleCores = visibleCoresOf(group, node, claim.lnc);
  }
  return okResult();
}

std::vector<ContainerView> claimViews(const json& pod, const std::string& claimName) {
  // The pod's own names for the claim: how its containers refer to it.
  std::vector<std::string> podNames;
  for (const json* list : {&kube::arrayAt(pod, {"spec", "resourceClaims"}),
                           &kube::arrayAt(pod, {"status", "resourceClaimStatuses"})}) {
    for (const json& entry : *list) {
      if (kube::stringAt(entry, {"resourceClaimName"}) == claimName) {
        podNames.push_back(kube::stringAt(entry, {"name"}));
      }
    }
  }
  const std::string podName = kube::stringAt(pod, {"metadata", "name"});
  std::vector<ContainerView> views;
  for (const char* kind : {"initContainers", "containers"}) {
    for (const json& container : kube::arrayAt(pod, {"spec", kind})) {
      const json& claims = kube::arrayAt(container, {"resources", "claims"});
      if (claims.empty()) continue;
      ContainerView view{podName + "/" + kube::stringAt(container, {"name"}), {}};
      bool uses = false;
      bool whole = false;
      for (const json& reference : claims) {
        const std::string name = kube::stringAt(reference, {"name"});
        if (name.empty() || std::find(podNames.begin(), podNames.end(), name) == podNames.end()) {
          continue;
        }
        uses = true;
        const std::string request = kube::stringAt(reference, {"request"});
        if (request.empty()) {
          whole = true;
        } else {
          view.requests.push_back(request);
        }
      }
      if (!uses) continue;
      if (whole) view.requests.clear();
      views.push_back(std::move(view));
    }
  }
  return views;
}

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

topology::CoreSet coresOfDevice(const NamedDevice& device, const topology::Node& node) {
  if (device.kind == NamedDevice::Kind::kCore) {
    topology::CoreSet core;
    core.insert(device.index);
    return core;
  }
  return node.coresOfDevices(chipsOfDevice(device, node));
}

Result<ResolvedClaim> resolveClaim(const json& claim, const ClaimRef& ref, const std::string& pool,
                                   const topology::Node& node,
                                   const std::vector<ContainerView>& views) {
  const std::string where = "claim " + ref.key();
  const json& allocation = kube::fieldAt(claim, {"status", "allocation"});
  const json* results = &kube::fieldAt(allocation, {"devices", "results"});
  // The plumbing checked this (checkAllocatedClaim); the claim is still untrusted JSON here.
  if (!results->is_array())
    return makeError(ErrorCode::kFailedPrecondition, where + ": not allocated");

  ResolvedClaim resolved;
  resolved.ref = ref;
  resolved.pool = pool;
  for (std::size_t i = 0; i < results->size(); ++i) {
    const json& result = (*results)[i];
    if (kube::stringAt(result, {"driver"}) != kDriverName) continue;
    const std::string at = where + ": status.allocation.devices.results[" + std::to_string(i) + "]";
    if (kube::stringAt(result, {"pool"}) != pool) {
      return makeError(ErrorCode::kFailedPrecondition,
                       at + " is from pool \"" + kube::stringAt(result, {"pool"}) +
                           "\", not this node's (\"" + pool + "\")");
    }
    const std::string name = kube::stringAt(result, {"device"});
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
    const std::string request = kube::stringAt(result, {"request"});
    const json& admin = kube::fieldAt(result, {"adminAccess"});
    const bool adminAccess = admin.is_boolean() && admin.get<bool>();
    auto existing =
        std::find_if(resolved.devices.begin(), resolved.devices.end(),
                     [&](const AllocatedDevice& device) { return device.name == name; });
    if (existing != resolved.devices.end()) {
      existing->requests.push_back(request);  // one device, two requests (admin access)
      existing->adminAccess = existing->adminAccess && adminAccess;
      continue;
    }
    resolved.devices.push_back({{request}, name, *what, adminAccess, {}});
  }
  if (resolved.devices.empty()) {
    return makeError(ErrorCode::kFailedPrecondition,
                     where + ": no device of " + std::string(kDriverName) + " is allocated to it");
  }

  // What the containers see (every device) and what the claim owns (devices without admin
  // access): only owned chips and cores are exclusive and reset after the claim.
  resolved.wholeChips = true;
  for (const AllocatedDevice& device : resolved.devices) {
    if (device.what.kind == NamedDevice::Kind::kCore) resolved.wholeChips = false;
    if (!device.adminAccess) {
      resolved.chips |= chipsOfDevice(device.what, node);
      resolved.cores |= coresOfDevice(device.what, node);
    }
  }

  auto configured = settingsPerRequest(allocation, resolved, node.lnc);
  if (!configured) return std::move(configured).error().withContext(where);
  const NeuronSettings& settings = *configured;
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
  std::vector<const AllocatedDevice*> all;
  for (const AllocatedDevice& device : resolved.devices)
    all.push_back(&device);
  resolved.visibleCores = visibleCoresOf(all, node, resolved.lnc);
  TORUS_RETURN_IF_ERROR(assignVisibleCores(resolved, views, node), where);
  return resolved;
}

}  // namespace torus::dra
