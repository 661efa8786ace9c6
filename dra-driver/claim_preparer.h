// ClaimPreparer: the node side of a ResourceClaim. Prepare reads the claim from the API,
// resolves its allocation on this node, refuses a chip or core another prepared claim holds,
// writes the CDI spec and records the claim in the checkpoint before answering; unprepare resets
// the claim's chips (unless another claim still uses one), removes the spec and forgets the
// claim. Both are idempotent, as kubelet retries them, and a restarted driver picks up the
// checkpoint, so nothing prepared is lost or prepared twice.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"
#include "device-plugin/node_view.h"
#include "dra-driver/cdi_spec.h"
#include "dra-driver/checkpoint.h"

namespace torus::dra {

// Reads a ResourceClaim by namespace and name (the API in production).
using ClaimReader =
    std::function<Result<nlohmann::json>(const std::string& nameSpace, const std::string& name)>;

struct PreparerOptions {
  std::string pool;  // this node's pool name (the node name)
  std::filesystem::path cdiRoot = "/var/run/cdi";
  std::filesystem::path checkpointFile;
};

struct PreparedDevice {
  std::vector<std::string> requests;
  std::string pool;
  std::string device;
  std::vector<std::string> cdiIds;
};

class ClaimPreparer {
 public:
  // Loads the checkpoint and removes CDI specs of claims it does not list (a crash between
  // writing a spec and recording the claim leaves one behind).
  static Result<std::unique_ptr<ClaimPreparer>> create(PreparerOptions options,
                                                       plugin::NodeView& node, ClaimReader reader);
  ClaimPreparer(PreparerOptions options, plugin::NodeView& node, ClaimReader reader,
                PreparedClaims prepared);

  Result<std::vector<PreparedDevice>> prepare(const ClaimRef& claim);
  Result<void> unprepare(const ClaimRef& claim);

  PreparedClaims prepared() const;
  topology::CoreSet heldCores() const;

 private:
  std::vector<PreparedDevice> answerOf(const ResolvedClaim& claim) const;
  // Writes the claim's CDI spec when it is missing (a reboot emptied the tmpfs).
  Result<void> ensureSpec(const ResolvedClaim& claim) const;
  topology::CoreSet heldCoresExcept(const std::string& uid) const;  // caller holds mutex_

  PreparerOptions options_;
  plugin::NodeView& node_;
  ClaimReader reader_;
  mutable std::mutex mutex_;
  PreparedClaims prepared_;
};

}  // namespace torus::dra
