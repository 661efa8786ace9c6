// ClaimDriver: what kubelet's DRA plumbing (kubelet_plugin, dra_service) asks of a driver, as
// upstream's kubeletplugin helper asks its DRAPlugin: prepare a claim's devices on this node, and
// unprepare them. The plumbing knows kubelet's gRPC, the sockets and a claim's identity, and reads
// the claim from the API and checks it before a prepare, as upstream's helper does; the driver
// behind it (ClaimPreparer) knows the devices. Nothing in dra-driver/kubelet/ includes the
// Neuron half.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"

namespace torus::dra {

// A claim as kubelet names it.
struct ClaimRef {
  std::string uid;
  std::string nameSpace;
  std::string name;

  // "namespace/name", as logs and errors name the claim.
  std::string key() const { return nameSpace + "/" + name; }
};

// One device of a prepared claim, as kubelet is answered.
struct PreparedDevice {
  std::vector<std::string> requests;  // as allocated: "request" or "request/subrequest"
  std::string pool;
  std::string device;
  std::vector<std::string> cdiIds;
};

// Reads an object by namespace and name (the API in production).
using ObjectReader =
    std::function<Result<nlohmann::json>(const std::string& nameSpace, const std::string& name)>;

// "request/subrequest" (a prioritized-list result) -> "request", the name kubelet matches a
// container's claim reference against (upstream's resourceclaim.BaseRequestRef).
std::string baseRequestName(const std::string& request);

// Whether `claim`, as the API returned it, is the one kubelet asked about (the same UID, not one
// deleted and re-created under the name: kNotFound) and is allocated (kFailedPrecondition), as
// upstream's helper checks before it calls a driver. Errors name the claim.
Result<void> checkAllocatedClaim(const nlohmann::json& claim, const ClaimRef& ref);

class ClaimDriver {
 public:
  virtual ~ClaimDriver() = default;
  // `object` is the claim as the API returned it, checked by checkAllocatedClaim. Idempotent:
  // kubelet retries, and re-prepares after a restart.
  virtual Result<std::vector<PreparedDevice>> prepare(const ClaimRef& claim,
                                                      const nlohmann::json& object) = 0;
  // Idempotent; a claim never prepared here is done at once.
  virtual Result<void> unprepare(const ClaimRef& claim) = 0;
};

}  // namespace torus::dra
