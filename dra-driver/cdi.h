// CDI (Container Device Interface) specs for prepared claims: one JSON file per claim under the
// CDI directory (/var/run/cdi), which the container runtime reads when kubelet passes it the CDI
// ids of a container's devices. Every device of a claim gets its own CDI device with the
// /dev/neuronN nodes it needs and the environment (NEURON_RT_VISIBLE_CORES,
// NEURON_LOGICAL_NC_CONFIG, the UltraServer mode) of the devices a container given it gets, so a
// container sees the same hand-off the device plugin's Allocate gives: the cores of exactly the
// device nodes it has.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "dra-driver/claim_allocation.h"

namespace torus::dra {

struct CdiDeviceIds {
  std::string device;            // the DRA device name
  std::vector<std::string> ids;  // "neuron.aws.com/device=<uid>-<device>"
};

// The spec for one claim; `devRoot` is the host directory of the neuronN nodes (/dev, or the
// simulator's tree), `containerDevRoot` where they appear in the container (/dev).
nlohmann::json cdiSpec(const ResolvedClaim& claim, const topology::Node& node,
                       const std::filesystem::path& devRoot);

// The CDI ids kubelet hands the runtime for each device of the claim.
std::vector<CdiDeviceIds> cdiDeviceIds(const ResolvedClaim& claim);

// The environment a container naming the whole claim sees.
std::vector<std::string> claimEnvironment(const ResolvedClaim& claim, const topology::Node& node);
// The environment the spec writes into `device`'s edit (AllocatedDevice::visibleCores).
std::vector<std::string> deviceEnvironment(const ResolvedClaim& claim,
                                           const AllocatedDevice& device,
                                           const topology::Node& node);

std::filesystem::path cdiSpecPath(const std::filesystem::path& cdiRoot, const std::string& uid);
// The claim UID a file in the CDI directory is the spec of; nullopt for another's file.
std::optional<std::string> claimUidOfSpec(const std::filesystem::path& file);

// Writes the spec atomically (the runtime may read the directory at any moment).
Result<void> writeCdiSpec(const std::filesystem::path& cdiRoot, const std::string& uid,
                          const nlohmann::json& spec);
// Removes it; a spec that is already gone is not an error.
Result<void> removeCdiSpec(const std::filesystem::path& cdiRoot, const std::string& uid);

}  // namespace torus::dra
