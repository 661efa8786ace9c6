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
#include "common/contracts/dra_names.h"
#include "common/contracts/opaque_config.h"
#include "common/topology/node.h"
#include "dra-driver/kubelet/claim_driver.h"

namespace torus::dra {

struct AllocatedDevice {
  std::vector<std::string> requests;  // the claim's request names this device answers
  std::string name;                   // "neurondevice3"
  NamedDevice what;
  // Every result for it has adminAccess (a monitor's view): the claim gets the device node but
  // does not own the chip, so it neither blocks nor resets another claim's workload there.
  bool adminAccess = false;
  // NEURON_RT_VISIBLE_CORES of this device's CDI edit, in the claim's LNC numbering: the cores of
  // every device a container given this one also gets (kubelet hands a container the devices of
  // the requests it names, and the runtime keeps the last edit's value of a variable).
  std::vector<int> visibleCores;
};

// What one consuming container gets of the claim: the requests it names (kubelet gives it the
// devices answering them), or every device when it names the claim without a request.
struct ContainerView {
  std::string container;              // "pod/container", for messages
  std::vector<std::string> requests;  // empty: the whole claim
};

struct ResolvedClaim {
  ClaimRef ref;
  std::string pool;
  std::vector<AllocatedDevice> devices;
  topology::DeviceSet chips;  // the chips the claim owns (not those it has admin access to)
  topology::CoreSet cores;    // owned cores in the node's LNC numbering
  bool wholeChips = false;    // true when every device is a chip or the node
  int lnc = 1;                // the claim's LNC (NeuronConfig or the node's)
  // Every device's cores in the claim's own LNC numbering.
  std::vector<int> visibleCores;
  std::optional<int> ultraServerMode;
  // The UIDs of the pods the claim was reserved for (status.reservedFor) when it was prepared,
  // and at each prepare since: a claim is not given back while a process of one still runs.
  std::vector<std::string> consumerPods;
};

// The chips a device of our pool stands for: itself, a core's chip, or every chip of the node.
topology::DeviceSet chipsOfDevice(const NamedDevice& device, const topology::Node& node);
// Its logical cores: the core itself, or every core of those chips.
topology::CoreSet coresOfDevice(const NamedDevice& device, const topology::Node& node);

// Reads the claim's allocation for `pool` (our node) and resolves it on `node`; that the claim is
// the one `ref` names (its UID) is checkAllocatedClaim's part, before. A config naming
// requests applies to those requests only; requests that end up with different settings (LNC,
// UltraServer mode) are refused, as one claim's chips run at one LNC. `views` (the consuming
// containers, see claimViews) decide each device's visible cores; without them every device shows
// the whole claim's. Errors name the claim and what is wrong: not allocated, allocated
// elsewhere, a device we never published, a config that does not parse or does not fit the
// devices, containers that see overlapping parts of the claim.
Result<ResolvedClaim> resolveClaim(const nlohmann::json& claim, const ClaimRef& ref,
                                   const std::string& pool, const topology::Node& node,
                                   const std::vector<ContainerView>& views = {});

// The distinct base request names of the claim's devices: with more than one, the consuming
// containers may each see a part of it, and the preparer reads them (claimViews) to say which.
std::vector<std::string> baseRequestsOf(const ResolvedClaim& claim);

// Sets each device's visibleCores for `views` (none: every device shows the whole claim). Each
// device's CDI edit sets NEURON_RT_VISIBLE_CORES, and the runtime keeps the last edit's value, so
// every container given a device must be given the same set of devices with it, and that set's
// cores are what the device's edit names; containers that see overlapping parts are an error
// naming both. resolveClaim applies it; the preparer again once it has read the views.
Result<void> assignVisibleCores(ResolvedClaim& claim, const std::vector<ContainerView>& views,
                                const topology::Node& node);

// The views of the containers (init containers too) of `pod` (a v1 Pod as the API returns it)
// that use the ResourceClaim named `claimName`, found through spec.resourceClaims (a claim named
// directly) or status.resourceClaimStatuses (one made from a template).
std::vector<ContainerView> claimViews(const nlohmann::json& pod, const std::string& claimName);

}  // namespace torus::dra
