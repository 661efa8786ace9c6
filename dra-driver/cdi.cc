#include "dra-driver/cdi.h"

#include <system_error>

#include <nlohmann/json.hpp>

#include "common/base/file_io.h"
#include "common/contracts/container_env.h"

namespace torus::dra {
namespace {

using nlohmann::json;

// 0.6.0 is the first CDI version with hostPath on device nodes; every runtime with CDI reads it.
constexpr const char* kCdiVersion = "0.6.0";

std::string cdiName(const ResolvedClaim& claim, const AllocatedDevice& device) {
  return claim.ref.uid + "-" + device.name;
}

// The runtime loads every *.json in the directory; the prefix says whose file it is.
constexpr std::string_view kSpecPrefix = "neuron.aws.com-";
constexpr std::string_view kSpecSuffix = ".json";

std::vector<std::string> environmentShowing(const std::vector<int>& visibleCores,
                                            const ResolvedClaim& claim,
                                            const topology::Node& node) {
  std::vector<std::string> env;
  for (const auto& [name, value] : contracts::neuronContainerEnv(
           node, topology::CoreSet::fromIds(visibleCores), claim.lnc, claim.ultraServerMode)) {
    env.push_back(name + "=" + value);
  }
  return env;
}

}  // namespace

std::vector<std::string> claimEnvironment(const ResolvedClaim& claim, const topology::Node& node) {
  return environmentShowing(claim.visibleCores, claim, node);
}

std::vector<std::string> deviceEnvironment(const ResolvedClaim& claim,
                                           const AllocatedDevice& device,
                                           const topology::Node& node) {
  return environmentShowing(device.visibleCores, claim, node);
}

json cdiSpec(const ResolvedClaim& claim, const topology::Node& node,
             const std::filesystem::path& devRoot) {
  json devices = json::array();
  for (const AllocatedDevice& device : claim.devices) {
    const std::vector<std::string> env = deviceEnvironment(claim, device, node);
    json nodes = json::array();
    chipsOfDevice(device.what, node).forEach([&](int chip) {
      const std::string name = "neuron" + std::to_string(chip);
      nodes.push_back({{"path", "/dev/" + name},
                       {"hostPath", (devRoot / name).string()},
                       {"permissions", "rw"}});
    });
    devices.push_back({{"name", cdiName(claim, device)},
                       {"containerEdits", {{"env", env}, {"deviceNodes", std::move(nodes)}}}});
  }
  return {{"cdiVersion", kCdiVersion}, {"kind", std::string(kCdiKind)}, {"devices", devices}};
}

std::vector<CdiDeviceIds> cdiDeviceIds(const ResolvedClaim& claim) {
  std::vector<CdiDeviceIds> ids;
  for (const AllocatedDevice& device : claim.devices) {
    ids.push_back({device.name, {std::string(kCdiKind) + "=" + cdiName(claim, device)}});
  }
  return ids;
}

std::filesystem::path cdiSpecPath(const std::filesystem::path& cdiRoot, const std::string& uid) {
  return cdiRoot / (std::string(kSpecPrefix) + uid + std::string(kSpecSuffix));
}

std::optional<std::string> claimUidOfSpec(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  if (name.size() <= kSpecPrefix.size() + kSpecSuffix.size() || !name.starts_with(kSpecPrefix) ||
      !name.ends_with(kSpecSuffix)) {
    return std::nullopt;
  }
  return name.substr(kSpecPrefix.size(), name.size() - kSpecPrefix.size() - kSpecSuffix.size());
}

Result<void> writeCdiSpec(const std::filesystem::path& cdiRoot, const std::string& uid,
                          const json& spec) {
  std::error_code ec;
  std::filesystem::create_directories(cdiRoot, ec);
  if (ec) {
    return makeError(ErrorCode::kUnavailable,
                     cdiRoot.string() + ": cannot create the CDI directory: " + ec.message());
  }
  // /var/run is a tmpfs: the spec does not survive a reboot however it is written, and the
  // preparer rewrites it from the checkpoint; readers only must never see half of it.
  return writeFileAtomically(cdiSpecPath(cdiRoot, uid), spec.dump(2) + "\n",
                             Durability::kAtomicOnly);
}

Result<void> removeCdiSpec(const std::filesystem::path& cdiRoot, const std::string& uid) {
  std::error_code ec;
  std::filesystem::remove(cdiSpecPath(cdiRoot, uid), ec);
  if (ec) {
    return makeError(ErrorCode::kUnavailable,
                     cdiSpecPath(cdiRoot, uid).string() + ": cannot remove: " + ec.message());
  }
  return okResult();
}

}  // namespace torus::dra
