// What a ResourceClaim (resource.k8s.io/v1, as the API returns it) asks of this driver on this
// node, resolved against the node model: the devices the scheduler allocated from our pool, the
// chips and logical cores they stand for, and the claim's opaque configuration. Pure: the API
// read and the side effects live in claim_preparer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "common/topology/node.h"
#include "dra-driver/driver_names.h"
#include "dra-driver/opaque_config.h"

namespace torus::dra {

struct AllocatedDevice {
  std::vector<std::string> requests;  // the claim's request names this device answers
  std::string name;                   // "neurondevice3"
  NamedDevice what;
  // Every result for it has adminAccess (a monitor's view): the claim gets the device node but
  // does not own the chip, so it neither blocks nor resets another claim's workload there.
  bool adminAccess = false;
};

struct ClaimRef {
  std::string uid;
  std::string nameSpace;
  std::string name;
};

struct ResolvedClaim {
  ClaimRef ref;
  std::string pool;
  std::vector<AllocatedDevice> devices;
  topology::DeviceSet chips;  // the chips the claim owns (not those it has admin access to)
  topology::CoreSet cores;    // owned cores in the node's LNC numbering
  bool wholeChips = false;    // true when every device is a chip or the node
  int lnc = 1;                // the claim's LNC (NeuronConfig or the node's)
  // NEURON_RT_VISIBLE_CORES in the claim's own LNC numbering.
  std::vector<int> visibleCores;
  std::optional<int> ultraServerMode;
};

// The chips a device of our pool stands for: itself, a core's chip, or every chip of the node.
topology::DeviceSet chipsOfDevice(const NamedDevice& device, const topology::Node& node);

// Reads the claim's allocation for `pool` (our node) and resolves it on `node`. Errors name the
// claim and what is wrong: not allocated, allocated elsewhere, a device we never published, a
// config that does not parse or does not fit the devices.
Result<ResolvedClaim> resolveClaim(const nlohmann::json& claim, const ClaimRef& ref,
                                   const std::string& pool, const topology::Node& node);

}  // namespace torus::dra
